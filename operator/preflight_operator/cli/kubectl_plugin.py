"""`kubectl vllm-preflight`: the kubectl plugin (executable `kubectl-vllm_preflight`).

kubectl finds the executable on PATH and runs it for `kubectl vllm-preflight ...` (a dash
in the command is an underscore in the file name). It talks to the cluster through the
same `kubectl` (so contexts, kubeconfig, exec credential plugins and proxies behave as the
user's kubectl does) and never imports the Kubernetes client:

- `status [-n NS | -A]`   the GPUValidation table, verdicts coloured on a terminal;
- `explain WORKLOAD|POD`  one view of why a vLLM pod does (not) start: the static
  findings, each pod's runtime report, scheduling, the Events and the fixes;
- `lint ...`              exactly `vllm-preflight lint`;
- `audit [-n NS | -A]`    what admission would answer for the workloads that exist
  (audit.py);
- `check-node NODE --tp N` a one-off canary Job that runs the checker on that node (or on
  a node pool, `--pool LABEL=VALUE`) and prints its report.

Functional core, imperative shell: building the table, the explain view, the canary Job
and reading its outcome are pure functions of JSON documents; `Kubectl` and `main()` do
the I/O. Failures print one line naming the flag or object at fault, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from preflight_contract.terminal import clean
from preflight_operator import __version__
from preflight_operator.cli.plugin_check_node import CanarySpec, cmd_check_node
from preflight_operator.cli.plugin_common import EXIT_ERROR, PROG, Kubectl, PluginError
from preflight_operator.cli.plugin_explain import cmd_explain
from preflight_operator.cli.plugin_status import cmd_status


def cmd_lint(argv: list[str]) -> int:
    from preflight_operator.cli import lint  # noqa: PLC0415 - only this subcommand needs the rules

    return lint.main(argv)


def cmd_audit(global_argv: list[str], argv: list[str], out: TextIO) -> int:
    from preflight_operator.cli import audit  # noqa: PLC0415 - only this subcommand needs the rules

    try:  # --context, --kubeconfig: the main parser's, before the subcommand
        global_args = build_parser().parse_args([*global_argv, "status"])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    return audit.main(_global_args(global_args), argv, out)


def _global_args(args: argparse.Namespace) -> list[str]:
    return [
        *(["--context", args.context] if args.context else []),
        *(["--kubeconfig", args.kubeconfig] if args.kubeconfig else []),
    ]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Why a vLLM pod does or does not start: GPUValidations, static findings,"
        " runtime reports, Events and fixes, and one-off canary checks of GPU nodes.",
    )
    parser.add_argument("--context", help="the kubeconfig context to use (as kubectl's)")
    parser.add_argument("--kubeconfig", help="path to the kubeconfig file (as kubectl's)")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="{status,explain,lint,audit,check-node}")

    def common(p: argparse.ArgumentParser, all_ns: bool = False) -> None:
        p.add_argument("-n", "--namespace", default="", help="namespace (default: the context's)")
        if all_ns:
            p.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")
        p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
        p.add_argument(
            "--exit-code", action="store_true", help="exit 1 when a verdict is fail or error"
        )

    status = sub.add_parser("status", help="the GPUValidation table")
    common(status, all_ns=True)
    explain = sub.add_parser(
        "explain", help="findings, runtime report, Events and fixes of one workload"
    )
    explain.add_argument(
        "target",
        metavar="WORKLOAD|POD",
        help="deploy/NAME, sts/NAME, lws/NAME, job/NAME, pod/NAME or NAME",
    )
    common(explain)
    sub.add_parser(
        "lint", help="the same as `vllm-preflight lint` (its -h lists the options)", add_help=False
    )
    sub.add_parser(
        "audit",
        help="what admission would answer for the vLLM workloads that exist (-h: options)",
        add_help=False,
    )
    check = sub.add_parser(
        "check-node", help="run the checker once on a node or pool (a canary Job)"
    )
    check.add_argument("node", nargs="?", default="", metavar="NODE")
    check.add_argument(
        "--pool", metavar="LABEL=VALUE", help="any node with this label instead of NODE"
    )
    check.add_argument(
        "--tp", type=int, required=True, help="tensor-parallel size (GPUs per replica)"
    )
    check.add_argument("--pp", type=int, default=1, help="pipeline-parallel size on this node")
    check.add_argument("--tier", choices=("fast", "deep"), default="fast")
    check.add_argument(
        "--image", default=CanarySpec.image, help="the check image (Dockerfile target check)"
    )
    check.add_argument(
        "--gpu-resource", default="nvidia.com/gpu", help="the extended resource to request"
    )
    check.add_argument("--shm", default="2Gi", help="size of the memory-backed /dev/shm")
    check.add_argument("--timeout", type=int, default=300, help="seconds to wait for the result")
    check.add_argument(
        "-n", "--namespace", default="", help="namespace of the Job (default: the context's)"
    )
    check.add_argument("--no-wait", action="store_true", help="create the Job and return")
    check.add_argument("--dry-run", action="store_true", help="print the Job and create nothing")
    return parser


def _command_index(args: Sequence[str]) -> int | None:
    """Where the subcommand is: the first word that is neither a global flag nor the
    value of --context/--kubeconfig."""
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
        elif arg in ("--context", "--kubeconfig"):
            skip = True
        elif not arg.startswith("-"):
            return i
    return None


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    out = out or sys.stdout
    parser = build_parser()
    # lint keeps its own parser and flags (vllm-preflight lint's), so pass them through.
    command_at = _command_index(args_list)
    if command_at is not None and args_list[command_at] == "lint":
        return cmd_lint(args_list[command_at + 1 :])
    if command_at is not None and args_list[command_at] == "audit":  # audit.py's own flags
        return cmd_audit(args_list[:command_at], args_list[command_at + 1 :], out)
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    if args.command is None:
        parser.print_help(out)
        return EXIT_ERROR
    kubectl = Kubectl(_global_args(args))
    try:
        if args.command == "status":
            if args.all_namespaces and args.namespace:
                raise PluginError("give -n NAMESPACE or -A, not both")
            return cmd_status(args, kubectl, out)
        if args.command == "explain":
            return cmd_explain(args, kubectl, out)
        return cmd_check_node(args, kubectl, out)
    except PluginError as exc:
        print(f"{PROG}: {clean(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
