"""The webhook server: kopf's TLS server, /validate answered directly, the rest by kopf."""

from __future__ import annotations

import asyncio
import json
import ssl
from pathlib import Path
from typing import Any

import aiohttp

from preflight_dev.testing.certs import CertificateAuthority
from preflight_dev.testing.process import free_ports
from preflight_operator.webhookserver import PreflightWebhookServer


def test_validate_is_direct_and_other_paths_go_to_kopf(tmp_path: Path) -> None:
    ca = CertificateAuthority()
    pair = ca.serving(["127.0.0.1"])
    (tmp_path / "tls.crt").write_bytes(pair.cert_pem)
    (tmp_path / "tls.key").write_bytes(pair.key_pem)
    (port,) = free_ports(1)
    reviewed: list[Any] = []
    kopf_calls: list[Any] = []

    def direct(data: Any) -> dict[str, Any]:
        reviewed.append(data)
        uid = data["request"]["uid"]
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "response": {"uid": uid, "allowed": False}}  # fmt: skip

    async def kopf_fn(data: Any, **kwargs: Any) -> dict[str, Any]:
        kopf_calls.append(kwargs["webhook"])
        return {"response": {"uid": data["request"]["uid"], "allowed": True}}

    server = PreflightWebhookServer(
        direct={"validate": direct}, addr="127.0.0.1", port=port,
        certfile=str(tmp_path / "tls.crt"), pkeyfile=str(tmp_path / "tls.key"),
    )  # fmt: skip

    async def scenario() -> list[Any]:
        configs = server(kopf_fn)
        config = await configs.__anext__()  # the server listens once it yields its config
        context = ssl.create_default_context(cadata=ca.cert_pem.decode())
        answers = []
        async with aiohttp.ClientSession() as session:
            for path in ("validate", "mutate-pods", "validate"):
                body = {"request": {"uid": f"{path}-1"}}
                async with session.post(f"{config['url']}/{path}", json=body,
                                        ssl=context) as rsp:  # fmt: skip
                    answers.append((rsp.status, await rsp.json()))
            async with session.post(f"{config['url']}/validate", data=b"{not json",
                                    ssl=context) as rsp:  # fmt: skip
                answers.append((rsp.status, None))
        await configs.aclose()
        return answers

    answers = asyncio.run(scenario())
    assert [a[0] for a in answers] == [200, 200, 200, 400]
    assert answers[0][1]["response"] == {"uid": "validate-1", "allowed": False}
    assert answers[1][1]["response"] == {"uid": "mutate-pods-1", "allowed": True}
    assert len(reviewed) == 2
    assert kopf_calls == ["mutate-pods"]
    assert json.dumps(answers[2][1])


def kopf_admission_fn(memo: Any) -> Any:
    """kopf's own admission function (what kopf hands the server), with /mutate-pods."""
    import functools

    import kopf
    from kopf._cogs.structs import references
    from kopf._core.engines import admission
    from kopf._core.reactor import inventory

    from preflight_operator.handlers import admission as handlers

    registry = kopf.OperatorRegistry()
    handlers.register(registry)
    insights = references.Insights()
    insights.webhook_resources.add(
        references.Resource(group="", version="v1", plural="pods", kind="Pod", namespaced=True)
    )
    return functools.partial(
        admission.serve_admission_request,
        settings=kopf.OperatorSettings(),
        memories=inventory.ResourceMemories(),
        memobase=memo,
        registry=registry,
        insights=insights,
        indices={},
    )


def test_mutate_pods_never_answers_500(tmp_path: Path) -> None:
    """kopf raised (aiohttp: 500) before our handler ran when `metadata` was not a
    mapping; the server admits such a pod unchanged."""
    from types import SimpleNamespace

    from preflight_operator.analysis import RulesAnalyser
    from preflight_operator.config import OperatorConfig
    from preflight_operator.policy import PolicyBook
    from preflight_operator.webhooks import AdmissionService

    ca = CertificateAuthority()
    pair = ca.serving(["127.0.0.1"])
    (tmp_path / "tls.crt").write_bytes(pair.cert_pem)
    (tmp_path / "tls.key").write_bytes(pair.key_pem)
    (port,) = free_ports(1)
    service = AdmissionService(OperatorConfig(), RulesAnalyser(), PolicyBook(), events=None)
    memo = SimpleNamespace(admission=service)
    server = PreflightWebhookServer(
        direct={}, addr="127.0.0.1", port=port,
        certfile=str(tmp_path / "tls.crt"), pkeyfile=str(tmp_path / "tls.key"),
    )  # fmt: skip
    objects: list[Any] = [
        {"metadata": "x", "spec": {}},
        {"metadata": ["a"], "spec": {"containers": "x"}},
        {"metadata": {"namespace": "team", "name": "p", "labels": "x"}, "spec": []},
        {"metadata": {"namespace": "team", "name": "p", "uid": "u"}, "spec": {}},
    ]

    async def scenario() -> list[tuple[int, Any]]:
        configs = server(kopf_admission_fn(memo))
        config = await configs.__anext__()
        context = ssl.create_default_context(cadata=ca.cert_pem.decode())
        answers = []
        async with aiohttp.ClientSession() as session:
            for i, obj in enumerate(objects):
                review = {
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "request": {
                        "uid": f"u{i}",
                        "resource": {"group": "", "version": "v1", "resource": "pods"},
                        "operation": "CREATE",
                        "userInfo": {},
                        "object": obj,
                    },
                }
                async with session.post(f"{config['url']}/mutate-pods", json=review,
                                        ssl=context) as rsp:  # fmt: skip
                    answers.append((rsp.status, await rsp.json()))
        await configs.aclose()
        return answers

    answers = asyncio.run(scenario())
    assert [status for status, _ in answers] == [200] * len(objects)
    for i, (_, body) in enumerate(answers):
        assert body["response"]["uid"] == f"u{i}"
        assert body["response"]["allowed"] is True
        assert "patch" not in body["response"]
