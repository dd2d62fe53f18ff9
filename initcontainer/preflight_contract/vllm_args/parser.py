"""``parse_vllm_args`` and ``_Parser``, the steps put together: rewrite (``rewrite``),
read (``argparse_walk``), convert and check (``plan``), in vLLM's order.

Separate from the steps so that the order they run in is read in one place.
"""

from __future__ import annotations

from typing import Optional, Sequence

from preflight_contract.vllm_args.argparse_walk import _ArgparseSteps
from preflight_contract.vllm_args.entry import vllm_args_start
from preflight_contract.vllm_args.parser_state import _Tok
from preflight_contract.vllm_args.plan import _PlanSteps
from preflight_contract.vllm_args.results import (
    API_SERVER,
    SERVE,
    ArgProblem,
    LoadConfig,
    ParsedArgs,
)
from preflight_contract.vllm_args.rewrite import _RewriteSteps


def parse_vllm_args(
    argv: Sequence[str],
    load_config: Optional[LoadConfig] = None,
) -> ParsedArgs:
    """Read a vLLM command line; never raises.

    ``argv`` is what follows the program: ``["serve", MODEL, "-tp", "2", ...]`` for the
    ``vllm`` CLI, or the options alone for ``python -m vllm.entrypoints.openai.api_server``.
    A full command (``vllm serve ...``, ``python3 -m vllm.entrypoints.openai.api_server
    ...``) is also accepted; origins then index into the full argv.

    ``load_config(path)`` returns the mapping of a ``--config`` YAML file. Raising
    LookupError (e.g. :class:`ConfigUnavailable`) means "unknown here" and becomes a
    warning; any other exception, or a non-mapping, is a problem (vLLM would fail too).
    """
    try:
        tokens = [str(a) for a in argv]
    except Exception as exc:  # e.g. an object whose __str__ raises
        return ParsedArgs(problems=[ArgProblem("", "", f"arguments are not text: {exc!r}")])
    try:
        return _Parser(tokens, load_config).run()
    except Exception as exc:  # the contract: never raise, whatever the input
        return ParsedArgs(
            problems=[ArgProblem("", "", f"could not read the vLLM arguments: {exc!r}")]
        )


class _Parser(_RewriteSteps, _ArgparseSteps, _PlanSteps):
    """One parse of one command line: the steps in vLLM's order (``run``)."""

    # -- driver -------------------------------------------------------------------------
    def run(self) -> ParsedArgs:
        start = 0
        entry = SERVE if self.argv[:1] == ["serve"] else API_SERVER
        found = vllm_args_start(self.argv)
        if found is not None:
            start, entry = found
        self.result.entrypoint = entry
        toks = [_Tok(t, start + i, t) for i, t in enumerate(self.argv[start:])]
        if entry == SERVE:
            toks = self.move_model_flag(toks)
            self.check_served_model_name(toks)
        toks = self.pull_config(toks, entry)
        toks = self.preprocess(toks)
        self.walk(toks)
        self.finish(entry)
        return self.result
