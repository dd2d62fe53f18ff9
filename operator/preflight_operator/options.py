"""Run-time options of `vllm-preflight operator` (flags and environment), parsed once."""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from preflight_operator import constants
from preflight_operator.workloads import FAMILIES


@dataclasses.dataclass(frozen=True)
class RunOptions:
    config_path: Path | None = None
    webhook_addr: str = "0.0.0.0"
    webhook_port: int = 9443
    webhook_cert_dir: Path = Path("/etc/vllm-preflight/certs")
    webhook_host: str | None = None  # only shown in logs; the chart owns the configurations
    metrics_addr: str = "0.0.0.0"
    metrics_port: int = 8080
    health_addr: str = "0.0.0.0"
    health_port: int = 8081
    standalone: bool = False
    peering_name: str = constants.PEERING_NAME
    peering_lifetime: int = 60
    priority: int | None = None  # None: random per replica
    identity: str = ""
    namespace: str = ""  # the release namespace (excluded like the system ones)
    kubeconfig: str | None = None
    workers: int = 4
    verbose: bool = False
    # serving stacks whose kinds are watched (workloads.FAMILIES); the chart passes the
    # enabled ones, so the operator watches only what its RBAC allows
    kind_families: tuple[str, ...] = FAMILIES

    @property
    def cert_file(self) -> Path:
        return self.webhook_cert_dir / "tls.crt"

    @property
    def key_file(self) -> Path:
        return self.webhook_cert_dir / "tls.key"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vllm-preflight operator",
        description="Run the vllm-preflight operator: admission webhooks, injection of the "
        "GPU preflight check, results on GPUValidation objects (docs/OPERATOR.md).",
    )
    add = parser.add_argument
    add(
        "--config",
        type=Path,
        help="configuration file (YAML; env PREFLIGHT_CONFIG; default "
        "/etc/vllm-preflight/config.yaml if present, else built-in defaults)",
    )
    add("--webhook-addr", default="0.0.0.0", help="address of the HTTPS webhook server")
    add("--webhook-port", type=int, default=9443, help="port of the webhook server (9443)")
    add(
        "--webhook-cert-dir",
        type=Path,
        default=Path("/etc/vllm-preflight/certs"),
        help="directory with tls.crt and tls.key (re-read when they change)",
    )
    add("--metrics-addr", default="0.0.0.0", help="address of the /metrics endpoint")
    add("--metrics-port", type=int, default=8080, help="Prometheus /metrics port; 0 disables")
    add("--health-addr", default="0.0.0.0", help="address of the /healthz endpoint")
    add("--health-port", type=int, default=8081, help="liveness port (GET /healthz)")
    add(
        "--peering",
        default=constants.PEERING_NAME,
        help="name of the ClusterKopfPeering object shared by the replicas",
    )
    add(
        "--peering-lifetime",
        type=int,
        default=60,
        help="seconds a replica's keep-alive counts before peers take over (60)",
    )
    add("--priority", type=int, default=None, help="peering priority (default: random per replica)")
    add("--standalone", action="store_true", help="no peering: for a single replica")
    add("--kubeconfig", default=None, help="kubeconfig (default: in-cluster, else KUBECONFIG)")
    add("--workers", type=int, default=4, help="concurrent reconciles (4)")
    add(
        "--kind-families",
        default=",".join(FAMILIES),
        help=f"serving stacks whose kinds are watched, comma-separated ({','.join(FAMILIES)}); "
        "empty: none",
    )
    add("--verbose", "-v", action="store_true", help="debug logging")
    return parser


def parse_options(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> RunOptions:
    env = os.environ if environ is None else environ
    args = build_parser().parse_args(list(argv))
    config = args.config or (Path(env["PREFLIGHT_CONFIG"]) if env.get("PREFLIGHT_CONFIG") else None)
    return RunOptions(
        config_path=config,
        webhook_addr=args.webhook_addr,
        webhook_port=args.webhook_port,
        webhook_cert_dir=args.webhook_cert_dir,
        metrics_addr=args.metrics_addr,
        metrics_port=args.metrics_port,
        health_addr=args.health_addr,
        health_port=args.health_port,
        standalone=args.standalone,
        peering_name=args.peering,
        peering_lifetime=args.peering_lifetime,
        priority=args.priority,
        identity=env.get("POD_NAME", ""),
        namespace=env.get("POD_NAMESPACE", ""),
        kubeconfig=args.kubeconfig,
        workers=max(1, args.workers),
        verbose=args.verbose,
        kind_families=_families(args.kind_families),
    )


def _families(text: str) -> tuple[str, ...]:
    wanted = tuple(f.strip() for f in text.split(",") if f.strip())
    unknown = [f for f in wanted if f not in FAMILIES]
    if unknown:
        raise SystemExit(
            f"vllm-preflight operator: --kind-families: unknown {', '.join(unknown)} "
            f"(known: {', '.join(FAMILIES)})"
        )
    return wanted
