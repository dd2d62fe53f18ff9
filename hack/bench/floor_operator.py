"""The floor of the operator benchmark: a bare kopf operator that watches the same pods the
same way (server-side label selector vllm-preflight.io/injected=true) and does nothing
with them. Same Python, same kopf, same way of logging in (a login handler with the
kubeconfig's credentials, as the operator's).

    python hack/bench/floor_operator.py --kubeconfig PATH
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path
from typing import Any

import kopf

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "operator"), str(REPO / "initcontainer")]

from preflight_operator.core import constants  # noqa: E402
from preflight_operator.runtime.credentials import credentials_from_kubeconfig  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kubeconfig", type=Path, required=True)
    args = parser.parse_args()
    creds = credentials_from_kubeconfig(args.kubeconfig)
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    async def login(**_: Any) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(
            server=creds.server, ca_data=creds.ca_pem, certificate_data=creds.cert_pem,
            private_key_data=creds.key_pem, token=creds.token,
        )  # fmt: skip

    @kopf.on.startup(registry=registry)
    async def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.watching.label_selectors["v1", "pods"] = constants.INJECTED_POD_SELECTOR
        settings.posting.enabled = False

    @kopf.on.event("v1", "pods", registry=registry)
    async def pod_event(**_: Any) -> None:
        return None

    kopf.configure(verbose=False)
    logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    asyncio.run(kopf.operator(registry=registry, clusterwide=True, standalone=True))


if __name__ == "__main__":
    main()
