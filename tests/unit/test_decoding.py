"""decoding.py and api.py's stream reading: every body from the API server is hostile
input (issue 23: a 1,000-deep managedFields stopped the operator)."""

from __future__ import annotations

import asyncio
import json

import pytest
from aiohttp.base_protocol import BaseProtocol
from aiohttp.streams import StreamReader

from preflight_contract import safejson
from preflight_operator.core import decoding
from preflight_operator.runtime import api

BOMB = '{"f:x":' * 1000 + "{}" + "}" * 1000


def deployment(name: str, *, fields: str = "{}", spec: str = '{"replicas":1}') -> str:
    return (
        f'{{"metadata":{{"name":"{name}","namespace":"ns","uid":"u-{name}",'
        f'"managedFields":[{{"manager":"m","fieldsV1":{fields}}}]}},"spec":{spec}}}'
    )


def test_a_deep_managedfields_is_dropped_and_the_object_kept() -> None:
    with pytest.raises(RecursionError):
        json.loads(deployment("d", fields=BOMB))  # what kopf's stream did
    event, why = decoding.decode_event(
        f'{{"type":"ADDED","object":{deployment("d", fields=BOMB)}}}', "/p"
    )
    assert why is None
    assert event is not None
    assert event["object"]["spec"] == {"replicas": 1}
    assert "managedFields" not in event["object"]["metadata"]


def test_managedfields_are_dropped_from_every_object() -> None:
    body, why = decoding.decode_body(deployment("d"), "/p")
    assert why is None
    assert "managedFields" not in body["metadata"]


def test_an_object_deep_in_its_own_fields_is_skipped_and_named() -> None:
    deep = "[" * 500 + "]" * 500
    event, why = decoding.decode_event(
        f'{{"type":"MODIFIED","object":{deployment("d", spec=deep)}}}', "/p"
    )
    assert event is None
    assert why is not None
    assert (why.reason, why.namespace, why.name, why.uid) == ("poisoned", "ns", "d", "u-d")
    assert "spec" in why.detail


def test_the_deletion_of_a_poisoned_object_is_still_delivered() -> None:
    deep = "[" * 500 + "]" * 500
    event, why = decoding.decode_event(
        f'{{"type":"DELETED","object":{deployment("d", spec=deep)}}}', "/p"
    )
    assert event is not None
    assert event["object"]["metadata"]["name"] == "d"
    assert why is not None


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("not json", "not-json"),
        ('{"type":"ADDED","object":{"a":Infinity}}', "not-json"),
        ("[" * 5000, "too-deep"),
    ],
)
def test_unreadable_lines_are_refused_with_a_reason(line: str, reason: str) -> None:
    event, why = decoding.decode_event(line, "/p")
    assert event is None
    assert why is not None
    assert why.reason == reason


def test_a_list_page_keeps_every_usable_item() -> None:
    deep = "[" * 500 + "]" * 500
    items = [deployment("a", fields=BOMB), deployment("b", spec=deep), deployment("c")]
    meta = '"metadata":{"resourceVersion":"7"}'
    page = f'{{"kind":"DeploymentList",{meta},"items":[{",".join(items)}]}}'
    body, rejected = decoding.decode_list(page, "/p")
    assert [i["metadata"]["name"] for i in body["items"]] == ["a", "c"]
    assert [r.name for r in rejected] == ["b"]
    assert body["metadata"]["resourceVersion"] == "7"


def test_a_list_page_that_is_not_a_list_is_refused() -> None:
    with pytest.raises(safejson.Rejected):
        decoding.decode_list("[1, 2]", "/p")


def lines_of(chunks: list[bytes], limit: int) -> list[bytes | None]:
    async def run() -> list[bytes | None]:
        loop = asyncio.get_running_loop()
        reader = StreamReader(BaseProtocol(loop), limit=2**16, loop=loop)
        for chunk in chunks:
            reader.feed_data(chunk)
        reader.feed_eof()
        return [line async for line in api._lines(reader, limit)]

    return asyncio.run(run())


def test_stream_lines_longer_than_the_limit_are_skipped_not_buffered() -> None:
    long_line = b"x" * 300
    got = lines_of([b"a\n", long_line[:150], long_line[150:] + b"\nb\n", b"c"], limit=100)
    assert got == [b"a", None, b"b", b"c"]


def test_stream_lines_split_across_chunks_are_joined() -> None:
    assert lines_of([b'{"a"', b":1}\n{", b'"b":2}\n'], limit=100) == [b'{"a":1}', b'{"b":2}']


def test_an_object_with_too_many_values_is_refused_before_decoding_and_named() -> None:
    """1.5 MiB of nested [] in managedFields is 800,000 lists: a second of json.loads in
    the event loop. Refused by a count, and still named for the Event."""
    bomb = "[" + ("[" * 99 + "]" * 99 + ",") * 8000 + "[]]"
    line = (
        '{"type":"MODIFIED","object":{"metadata":{"name":"big","namespace":"ns",'
        '"uid":"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",'
        f'"managedFields":[{{"fieldsV1":{bomb}}}]}}}}}}'
    )
    event, why = decoding.decode_event(line, "/p")
    assert event is None
    assert why is not None
    assert (why.reason, why.name, why.namespace) == ("too-large", "big", "ns")
    assert why.uid == "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"


def test_a_review_with_a_deep_managedfields_is_read_as_if_it_had_none() -> None:
    obj = deployment("d", fields=BOMB)
    review, why = decoding.decode_review(f'{{"request":{{"uid":"u","object":{obj}}}}}', "/validate")
    assert why is None
    assert review is not None
    assert review["request"]["object"]["spec"] == {"replicas": 1}


def test_a_review_of_a_poisoned_object_is_returned_with_the_reason() -> None:
    deep = "[" * 500 + "]" * 500
    obj = deployment("d", spec=deep)
    review, why = decoding.decode_review(f'{{"request":{{"uid":"u","object":{obj}}}}}', "/validate")
    assert review is not None
    assert review["request"]["uid"] == "u"
    assert why is not None
    assert (why.reason, why.name) == ("poisoned", "d")
