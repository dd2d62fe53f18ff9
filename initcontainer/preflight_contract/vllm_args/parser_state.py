"""The parser's state, shared by its steps: ``_Tok`` (one token with where it came from)
and ``_ParserBase`` (argv, the result being built, the raw values read, the
positionals, and how a step records a problem or a warning).

Separate so that each step (``rewrite``, ``argparse_walk``, ``plan``) is a mixin over the
same state, and ``parser`` puts them together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from preflight_contract.vllm_args.results import ArgProblem, LoadConfig, Origin, ParsedArgs


@dataclass
class _Tok:
    text: str
    index: Optional[int]  # position in the caller's argv; None for --config tokens
    spelling: str  # as the user wrote it (before underscore conversion)
    from_config: bool = False


class _ParserBase:
    """The parser's state, and how a step records a problem or a warning."""

    def __init__(self, argv: List[str], load_config: Optional[LoadConfig]) -> None:
        self.argv = argv
        self.load_config = load_config
        self.result = ParsedArgs()
        self.raw: Dict[str, Tuple[object, Origin]] = {}
        self.positionals: List[_Tok] = []
        # positionals that may really be the value of an option we do not know (a newer
        # vLLM flag taking several values) or come from a value unknown here
        self.uncertain: List[_Tok] = []

    # -- problems -----------------------------------------------------------------------
    def problem(self, flag: str, value: str, message: str, dest: str = "") -> None:
        self.result.problems.append(ArgProblem(flag, value, message, dest))

    def warning(self, flag: str, value: str, message: str, dest: str = "") -> None:
        self.result.warnings.append(ArgProblem(flag, value, message, dest))
