"""The `vllm-preflight` command: dispatches to `check`, `lint` and `operator`.

Each subcommand's module is imported only when it is chosen, so `check` on a GPU host
never loads kopf or the Kubernetes client, and `lint` in CI never loads NVML.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from preflight_operator import __version__

# subcommand -> (module, one-line help). Each module has `main(argv: list[str]) -> int`.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "check": ("preflight_check.cli", "validate this host's GPU view for a vLLM plan"),
    "lint": ("preflight_operator.cli.lint", "statically validate vLLM manifests (CI, pre-apply)"),
    "operator": ("preflight_operator.main", "run the Kubernetes operator and webhooks"),
}

USAGE = "usage: vllm-preflight {check,lint,operator,completion} [options]   (-h on each for help)"


def _help() -> str:
    lines = [USAGE, "", "subcommands:"]
    lines += [f"  {name:<9} {text}" for name, (_, text) in SUBCOMMANDS.items()]
    lines.append("  completion print a shell completion script: completion {bash,zsh,fish}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(_help())
        return 0 if args else 2
    if args[0] in ("-V", "--version", "version"):
        print(f"vllm-preflight {__version__}")
        return 0
    name, rest = args[0], args[1:]
    if name == "completion":  # not in SUBCOMMANDS: it reads their parsers, it has none
        from preflight_operator.cli import completion  # noqa: PLC0415 - only here

        return completion.main(rest)
    if name not in SUBCOMMANDS:
        print(f"vllm-preflight: unknown subcommand {name!r}\n{_help()}", file=sys.stderr)
        return 2
    module = importlib.import_module(SUBCOMMANDS[name][0])
    code: int = module.main(rest)
    return code


if __name__ == "__main__":
    sys.exit(main())
