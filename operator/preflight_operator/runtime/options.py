"""Run-time options of `vllm-preflight operator` (flags and environment), parsed once."""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from preflight_operator import __version__
from preflight_operator.core import constants
from preflight_operator.core.workloads import FAMILIES
from preflight_operator.runtime.writegate import (
    DEFAULT_LEASE_DURATION_S,
    DEFAULT_RENEW_DEADLINE_S,
    DEFAULT_RETRY_PERIOD_S,
    validate_timing,
)


@dataclasses.dataclass(frozen=True)
class RunOptions:
    config_path: Path | None = None
    webhook_addr: str = "0.0.0.0"
    webhook_port: int = 9443
    webhook_cert_dir: Path = Path("/etc/vllm-preflight/certs")
    # A CA bundle: when set, the webhook port answers only a caller with a client
    # certificate it signed (the API server's, AdmissionConfiguration; docs/OPERATOR.md)
    webhook_client_ca: Path | None = None
    webhook_host: str | None = None  # only shown in logs; the chart owns the configurations
    # the ValidatingWebhookConfiguration whose fail-closed entry the leader keeps in step
    # with the namespaces under Enforce (runtime/failclosedsync.py); "": none
    webhook_configuration: str = ""
    metrics_addr: str = "0.0.0.0"
    metrics_port: int = 8080
    health_addr: str = "0.0.0.0"
    health_port: int = 8081
    health_stall_seconds: float = 10.0  # /healthz fails once the loop stalls this long
    standalone: bool = False  # no leader election: one replica, always writing
    lease_name: str = constants.LEASE_NAME
    lease_namespace: str = ""  # "": the release namespace, else "default"
    lease_duration: int = DEFAULT_LEASE_DURATION_S
    renew_deadline: float = DEFAULT_RENEW_DEADLINE_S
    retry_period: float = DEFAULT_RETRY_PERIOD_S
    identity: str = ""
    namespace: str = ""  # the release namespace (excluded like the system ones)
    kubeconfig: str | None = None
    workers: int = 4
    verbose: bool = False
    # serving stacks whose kinds are watched (workloads.FAMILIES); the chart passes the
    # enabled ones, so the operator watches only what its RBAC allows
    kind_families: tuple[str, ...] = FAMILIES

    @property
    def lease_where(self) -> str:
        """The Lease's namespace: --lease-namespace, else the release namespace."""
        return self.lease_namespace or self.namespace or "default"

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
    add("--version", action="version", version=f"%(prog)s {__version__}")
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
    add(
        "--webhook-configuration",
        default="",
        help="ValidatingWebhookConfiguration whose fail-closed entry lists the namespaces "
        "under Enforce (kept in step by the Lease holder; the chart passes its own); "
        "empty: none",
    )
    add(
        "--webhook-client-ca",
        type=Path,
        default=None,
        help="CA bundle (PEM): answer only callers with a client certificate it signed, "
        "i.e. the API server configured with an AdmissionConfiguration kubeconfig "
        "(docs/OPERATOR.md, 'Who can call the webhook port'); default: any caller",
    )
    add("--metrics-addr", default="0.0.0.0", help="address of the /metrics endpoint")
    add("--metrics-port", type=int, default=8080, help="Prometheus /metrics port; 0 disables")
    add("--health-addr", default="0.0.0.0", help="address of the /healthz endpoint")
    add("--health-port", type=int, default=8081, help="liveness port (GET /healthz)")
    add(
        "--health-stall-seconds",
        type=float,
        default=10.0,
        help="/healthz fails once the event loop has not run for this long (10): wedged",
    )
    add(
        "--lease-name",
        default=constants.LEASE_NAME,
        help="the coordination.k8s.io Lease the replicas elect a leader with "
        f"({constants.LEASE_NAME})",
    )
    add(
        "--lease-namespace",
        default="",
        help="namespace of the Lease (default: the release namespace, POD_NAMESPACE)",
    )
    add(
        "--lease-duration",
        type=int,
        default=DEFAULT_LEASE_DURATION_S,
        help="seconds a follower waits after the leader's last renewal before taking over "
        f"({DEFAULT_LEASE_DURATION_S})",
    )
    add(
        "--renew-deadline",
        type=float,
        default=DEFAULT_RENEW_DEADLINE_S,
        help="seconds the leader keeps writing without a successful renewal "
        f"({DEFAULT_RENEW_DEADLINE_S:g}; shorter than --lease-duration)",
    )
    add(
        "--retry-period",
        type=float,
        default=DEFAULT_RETRY_PERIOD_S,
        help=f"seconds between two tries to take or renew the Lease ({DEFAULT_RETRY_PERIOD_S:g})",
    )
    add(
        "--standalone",
        action="store_true",
        help="no leader election: for a single replica (it always writes)",
    )
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
    parser = build_parser()
    args = parser.parse_args(list(argv))
    problem = validate_timing(args.lease_duration, args.renew_deadline, args.retry_period)
    if problem and not args.standalone:
        parser.error(
            f"{problem} (given: --lease-duration {args.lease_duration}, --renew-deadline "
            f"{args.renew_deadline:g}, --retry-period {args.retry_period:g})"
        )
    config = args.config or (Path(env["PREFLIGHT_CONFIG"]) if env.get("PREFLIGHT_CONFIG") else None)
    return RunOptions(
        config_path=config,
        webhook_addr=args.webhook_addr,
        webhook_port=args.webhook_port,
        webhook_cert_dir=args.webhook_cert_dir,
        webhook_configuration=args.webhook_configuration,
        webhook_client_ca=args.webhook_client_ca,
        metrics_addr=args.metrics_addr,
        metrics_port=args.metrics_port,
        health_addr=args.health_addr,
        health_port=args.health_port,
        health_stall_seconds=max(1.0, args.health_stall_seconds),
        standalone=args.standalone,
        lease_name=args.lease_name,
        lease_namespace=args.lease_namespace,
        lease_duration=args.lease_duration,
        renew_deadline=args.renew_deadline,
        retry_period=args.retry_period,
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
