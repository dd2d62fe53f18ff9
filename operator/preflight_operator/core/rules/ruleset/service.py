"""A Service named `vllm` beside a vLLM pod.

The kubelet gives every container ``{SERVICE}_PORT=tcp://IP:PORT`` for each Service of the
namespace that has a cluster IP (not headless, not ExternalName), unless the pod sets
``enableServiceLinks: false`` or the container defines the variable itself. For a Service
named ``vllm`` that is ``VLLM_PORT=tcp://10.0.0.1:8000``, which vLLM reads as its own port
setting and rejects: "VLLM_PORT 'tcp://...' appears to be a URI. This may be caused by a
Kubernetes service discovery issue".

The docs of its rules (hack/gen_rule_docs.py renders them into docs/RULES.md):

### `vllm-port-service`
A Service named `vllm` with a cluster IP exists in the namespace (in the manifest set or
the cluster). The kubelet then sets `VLLM_PORT=tcp://<cluster-ip>:<port>` in every
container of the namespace (unless the pod sets `enableServiceLinks: false` or the
container sets `VLLM_PORT` itself); headless and ExternalName Services inject nothing.
*Symptom:* `ValueError: VLLM_PORT 'tcp://10.96.0.12:8000' appears to be a URI. This may be
caused by a Kubernetes service discovery issue, check the warning in:
https://docs.vllm.ai/en/stable/serving/env_vars.html`.
vLLM reads `VLLM_PORT` since 0.4.3 (vllm-project/vllm#4914; `vllm/envs.py` of each
release, generated into `vllm_versions.py`): on vLLM's own image tagged with an older
release (`vllm/vllm-openai:v0.4.1`) the Service is harmless and nothing is said. Before
0.9 the error is `ValueError: invalid literal for int() with base 10: 'tcp://...'`. The
message names the release judged, or says that the image's release is not known here
(every release since 0.4.3 reads the variable).
*Fix:* rename the Service, set `enableServiceLinks: false`, or make it headless.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from preflight_contract.verdicts import FAIL
from preflight_operator.core.rules.certainty import VLLM_CODE, Basis
from preflight_operator.core.rules.context import ContainerContext
from preflight_operator.core.rules.registry import RULE_INFO, register
from preflight_operator.core.rules.vllmversion import env_read, image_version, marker
from preflight_operator.core.rules.vocabulary import Finding, Policy


def injects_links(service: Mapping[str, Any]) -> bool:
    spec = service.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    if spec.get("type") == "ExternalName":
        return False
    return spec.get("clusterIP") not in ("None", "none")


def link_prefix(service: Mapping[str, Any]) -> str:
    meta = service.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return str(name or "").upper().replace("-", "_")


@register(
    "vllm-port-service",
    FAIL,
    "a Service named vllm injects VLLM_PORT=tcp://...",
    Basis(VLLM_CODE, "vllm/envs.py: a VLLM_PORT that is a URI is refused"),
    fix=(
        "rename the Service (e.g. `vllm-api`), make it headless, or set `enableServiceLinks: false`"
    ),
)
def vllm_port_service(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    if ctx.spec.get("enableServiceLinks") is False:
        return
    if ctx.process_env("VLLM_PORT")[1] is not None:
        return  # an explicit VLLM_PORT wins over the Service link
    version = image_version(ctx.container.get("image"))
    if env_read("VLLM_PORT", version) is False:
        return  # this release does not read VLLM_PORT (it came in 0.4.3)
    for service in ctx.services:
        if link_prefix(service) == "VLLM" and injects_links(service):
            yield RULE_INFO["vllm-port-service"].finding(
                "Service 'vllm' in this namespace has a cluster IP, so Kubernetes sets "
                "VLLM_PORT=tcp://<cluster-ip>:<port> in this container and vLLM refuses to "
                f"start: {_symptom(version)} ({_judged(version)})",
                f"{ctx.pod_path}.enableServiceLinks",
                "rename the Service (e.g. vllm-server), or set enableServiceLinks: false in "
                "the pod spec, or make the Service headless (clusterIP: None)",
            )
            return


def _symptom(version: object) -> str:
    uri = marker("VLLM_PORT refuses a URI", version)  # type: ignore[arg-type]
    if uri is False:
        return "\"ValueError: invalid literal for int() with base 10: 'tcp://...'\""
    return (
        "\"VLLM_PORT 'tcp://...' appears to be a URI. This may be caused by a Kubernetes "
        'service discovery issue"'
    )


def _judged(version: object) -> str:
    release = getattr(version, "release", None)
    if release:
        return f"vLLM {release} reads VLLM_PORT, {getattr(version, 'why', '')}"
    return (
        f"the image's vLLM release is not known here ({getattr(version, 'why', '')}); every "
        "release since 0.4.3 reads VLLM_PORT"
    )
