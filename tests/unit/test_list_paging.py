"""api.py list_pages and apinames.py: bounded by the object, never by the page, and no
name outside the API server's rules ever enters a path (issue 34).

Before: a page over 4 MiB was refused whole (4 pods of 1 MB stopped every restart of the
operator at its first listing), and an ownerReference's name ``../../..`` went into a GET.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from preflight_operator.core import apinames, decoding
from preflight_operator.core.decoding import Rejection
from preflight_operator.core.workloads import DEPLOYMENT, POD, WorkloadKind, WorkloadRef
from preflight_operator.runtime import api

MIB = 1024 * 1024


def pod(name: str, size: int = 0) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "t", "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "c", "env": [{"name": "X", "value": "x" * size}]}]},
    }


class FakeLists:
    """A list endpoint that pages like the API server: limit, continue, ListMeta first."""

    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.items = items
        self.limits: list[int] = []
        self.requests: list[str] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(request.path)
        limit = int(request.query.get("limit", "500"))
        self.limits.append(limit)
        token = request.query.get("continue", "")
        start = int(base64.urlsafe_b64decode(token)) if token else 0
        chunk = self.items[start : start + limit]
        end = start + len(chunk)
        meta: dict[str, Any] = {"resourceVersion": "42"}
        if end < len(self.items):
            meta["continue"] = base64.urlsafe_b64encode(str(end).encode()).decode()
            meta["remainingItemCount"] = len(self.items) - end
        body = {"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": chunk}
        return web.Response(body=json.dumps(body, separators=(",", ":")).encode())


def with_api(
    items: list[dict[str, Any]],
    body: Callable[[api.KubeApi, FakeLists], Coroutine[Any, Any, Any]],
) -> tuple[Any, FakeLists]:
    fake = FakeLists(items)

    async def run() -> Any:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", fake.handle)
        server = TestServer(app)
        await server.start_server()
        try:
            credentials = api.Credentials(server=str(server.make_url("")).rstrip("/"))
            async with api.KubeApi(credentials) as kube:
                return await body(kube, fake)
        finally:
            await server.close()

    return asyncio.run(run()), fake


async def names(pages: AsyncIterator[tuple[list[dict[str, Any]], str]]) -> list[str]:
    return [item["metadata"]["name"] async for items, _ in pages for item in items]


def test_a_page_over_the_bound_is_read_again_smaller_and_every_object_kept() -> None:
    """4 pods of 1.1 MB among small ones: the 500-item page (4.5 MB) was refused whole."""
    items = [pod(f"small-{i}") for i in range(10)]
    for i in range(4):
        items.insert(2 + 3 * i, pod(f"big-{i}", int(1.1 * MIB)))

    async def body(kube: api.KubeApi, fake: FakeLists) -> list[str]:
        return await names(kube.list_pages("/api/v1/pods"))

    got, fake = with_api(items, body)
    assert got == [i["metadata"]["name"] for i in items]
    assert fake.limits[0] == 500
    assert fake.limits[1] < 500  # read again smaller, never refused


def test_one_object_alone_over_the_bound_is_set_aside_by_name_and_the_list_goes_on() -> None:
    items = [pod("a"), pod("huge", 5 * MIB), pod("b"), pod("c")]
    told: list[Rejection] = []

    async def body(kube: api.KubeApi, fake: FakeLists) -> list[str]:
        kube.rejected = told.append
        return await names(kube.list_pages("/api/v1/pods"))

    got, fake = with_api(items, body)
    assert got == ["a", "b", "c"]
    assert [(r.name, r.namespace, r.reason) for r in told] == [("huge", "t", "too-large")]
    assert fake.limits[-1] > 1  # grown back after the object was set aside


def test_the_last_object_alone_over_the_bound_ends_the_list() -> None:
    async def body(kube: api.KubeApi, fake: FakeLists) -> list[tuple[list[str], str]]:
        return [
            ([i["metadata"]["name"] for i in items], version)
            async for items, version in kube.list_pages("/api/v1/pods")
        ]

    got, _ = with_api([pod("a"), pod("huge", 5 * MIB)], body)
    assert [n for page, _ in got for n in page] == ["a"]
    assert {version for _, version in got} == {"42"}


def test_an_item_with_too_many_values_is_left_out_of_its_page_and_named() -> None:
    """Each item of a page is bounded like one watch event (OBJECT_MAX_ITEMS)."""
    many = {"metadata": {"name": "many", "namespace": "t"}, "spec": {"x": [[]] * 25_000}}
    page = json.dumps({"metadata": {}, "items": [pod("a"), many, pod("b")]})
    body, rejected = decoding.decode_list(page, "/p")
    assert [i["metadata"]["name"] for i in body["items"]] == ["a", "b"]
    assert [(r.name, r.reason) for r in rejected] == [("many", "too-large")]


def test_a_page_over_the_values_bound_is_refused_to_be_read_smaller() -> None:
    items = [{"metadata": {"name": f"p{i}"}, "v": [[]] * 15_000} for i in range(30)]
    with pytest.raises(decoding.safejson.Rejected):
        decoding.decode_list(json.dumps({"metadata": {}, "items": items}), "/p")


def test_the_head_of_a_refused_page_names_its_object_and_where_the_list_goes_on() -> None:
    raw = (
        b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"981",'
        b'"continue":"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6OTgxfQ","remainingItemCount":3},'
        b'"items":[{"metadata":{"name":"big-0","generateName":"big-","namespace":"t",'
        b'"uid":"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0","resourceVersion":"9"'
    )
    head = decoding.list_head(raw, "/api/v1/pods", "too-large", "over")
    assert head is not None
    assert (head.resource_version, head.continue_token) == (
        "981",
        "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6OTgxfQ",
    )
    assert (head.first.name, head.first.namespace) == ("big-0", "t")
    assert head.first.uid == "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
    assert decoding.list_head(b'{"items":[', "/p", "too-large", "") is None


# -- names in paths ------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["../../../api/v1/nodes/n", "a/b", "..", "A", "a%2Fb", "a b", "a\n", "", "x" * 254, "-a"],
)
def test_a_name_outside_the_api_servers_rules_never_enters_a_path(name: str) -> None:
    with pytest.raises(apinames.MalformedReference, match="malformed reference"):
        api.object_path(DEPLOYMENT, "team-a", name)


@pytest.mark.parametrize("namespace", ["../x", "a.b", "A", "x" * 64])
def test_a_namespace_must_be_a_dns_label(namespace: str) -> None:
    with pytest.raises(apinames.MalformedReference):
        api.collection_path(POD, namespace)


def test_an_owner_kind_from_a_reference_brings_no_path_of_its_own() -> None:
    """An unknown owner kind's group and version come from the ownerReference."""
    for kind in (
        WorkloadKind("X", "../../api", "v1", "xs"),
        WorkloadKind("X", "example.com", "v1/../..", "xs"),
        WorkloadKind("X/..", "example.com", "v1", "x/..s"),
    ):
        with pytest.raises(apinames.MalformedReference):
            api.object_path(kind, "team-a", "ok")


def test_well_formed_names_make_the_paths_they_always_made() -> None:
    assert api.object_path(DEPLOYMENT, "team-a", "vllm.v2-0") == (
        "/apis/apps/v1/namespaces/team-a/deployments/vllm.v2-0"
    )
    assert api.collection_path(POD, None) == "/api/v1/pods"


def test_a_malformed_owner_makes_no_call_and_is_an_api_error_to_callers() -> None:
    ref = WorkloadRef("team-a", "Deployment", "../../../api/v1/nodes/gpu-1", "apps/v1")

    async def body(kube: api.KubeApi, fake: FakeLists) -> str:
        try:
            await kube.get_workload(ref)
        except api.API_ERRORS as exc:  # what every caller already catches
            return str(exc)
        return "read"

    said, fake = with_api([], body)
    assert "malformed reference" in said
    assert fake.requests == []


def test_a_node_path_is_built_only_from_a_node_name() -> None:
    """Node feedback and the probe read Nodes through apinames.node_path, the one rule."""
    assert apinames.node_path("gpu-node-1.example") == "/api/v1/nodes/gpu-node-1.example"
    for bad in ("../../api/v1/namespaces", "a/b", "Upper", "", "x" * 254, None):
        with pytest.raises(apinames.MalformedReference):
            apinames.node_path(bad)
