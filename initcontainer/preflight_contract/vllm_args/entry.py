"""``vllm_args_start``: where vLLM's own arguments begin in a full command (``vllm serve``,
``python -m vllm.entrypoints.openai.api_server``, ...), and which entry point it is.

Separate from the parser: the rules engine calls it on a container's command without
parsing it (to find the vLLM container at all).
"""

from __future__ import annotations

import re
from typing import Optional, Sequence, Tuple

from preflight_contract.vllm_args.results import API_SERVER, SERVE

_PYTHON = re.compile(r"^python[0-9.]*$")
# NVIDIA Dynamo's vLLM worker takes vLLM's engine options (and its own) and no positional
_API_SERVER_MODULES = (
    "vllm.entrypoints.openai.api_server",
    "vllm.entrypoints.api_server",
    "dynamo.vllm",
)
_CLI_MODULES = ("vllm.entrypoints.cli.main",)


def vllm_args_start(argv: Sequence[str]) -> Optional[Tuple[int, str]]:
    """Where vLLM's own arguments begin in a full command, and which entry point it is.

    ``["vllm", "serve", "m"]`` -> ``(1, "serve")`` (the ``serve`` token is included);
    ``["python3", "-u", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"]`` ->
    ``(4, "api_server")``. None when argv does not start vLLM's server.
    """
    if not argv:
        return None
    program = str(argv[0]).rsplit("/", 1)[-1]
    if program == "vllm":
        if len(argv) > 1 and argv[1] == "serve":
            return 1, SERVE
        return None
    if not _PYTHON.match(program):
        return None
    i = 1
    while i < len(argv):
        tok = str(argv[i])
        module = None
        if tok == "-m" and i + 1 < len(argv):
            module, nxt = str(argv[i + 1]), i + 2
        elif tok.startswith("-m") and len(tok) > 2:
            module, nxt = tok[2:], i + 1
        elif tok.startswith("-") and tok not in ("-", "--"):
            # interpreter options such as -u, -O, -X dev, -W ignore
            i += 2 if tok in ("-X", "-W", "-c") else 1
            continue
        else:
            return None  # a script, not a module
        if module in _API_SERVER_MODULES:
            return nxt, API_SERVER
        if module in _CLI_MODULES and nxt < len(argv) and argv[nxt] == "serve":
            return nxt, SERVE
        return None
    return None
