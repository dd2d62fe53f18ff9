"""Runs inside a virtualenv holding one real vLLM release (hack/vllm/oracle.py starts it):
vLLM's own parser of ``python -m vllm.entrypoints.openai.api_server``, built as that
module's ``__main__`` builds it, judges each command line it is given.

Standard library and the installed vLLM only. stdin: {"options": [...], "no_value": [...],
"extra": [[...argv...], ...]}; stdout: {"vllm": version, "cases": [...]}, one case per
command line: the argv after the program, whether ``parse_args`` accepted it, and the last
line argparse wrote (its error) when it did not. For each option string the parser knows,
a value is taken from the parser itself (its first choice, else the first of a few
candidates it accepts), so a known option is tried with a value that release accepts.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from typing import Any

MODEL = ["--model", "facebook/opt-125m"]
CANDIDATES = ("1", "0.5", "auto", "{}", "x", "image=1", "a=b", "a=b=c", "a:b")


def build_parser() -> argparse.ArgumentParser:
    """The api_server's parser as its ``__main__`` block builds it in each era: 0.4.x
    ``make_arg_parser()``; later ``make_arg_parser(FlexibleArgumentParser(...))`` from
    vllm/entrypoints/openai/cli_args.py, 0.29-0.32 launchers/, then common/."""
    make = None
    why: list[str] = []
    for module in (
        "vllm.entrypoints.openai.cli_args",
        "vllm.entrypoints.launchers.cli_args",
        "vllm.entrypoints.common.cli_args",
    ):
        try:
            make = __import__(module, fromlist=["make_arg_parser"]).make_arg_parser
            break
        except (ImportError, AttributeError) as exc:
            why.append(f"{module}: {type(exc).__name__}: {exc}")
    if make is None:
        raise SystemExit("no make_arg_parser in this vLLM:\n" + "\n".join(why))
    try:
        return make()  # type: ignore[no-any-return]  # 0.4.x: takes no parser
    except TypeError:
        pass
    flexible = None
    for module in ("vllm.utils.argparse_utils", "vllm.utils"):
        try:
            flexible = __import__(module, fromlist=["FlexibleArgumentParser"])
            flexible = flexible.FlexibleArgumentParser
            break
        except (ImportError, AttributeError):
            continue
    if flexible is None:
        raise SystemExit("no FlexibleArgumentParser in this vLLM")
    parser = flexible(description="vLLM OpenAI-Compatible RESTful API server.")
    return make(parser)  # type: ignore[no-any-return]


def judge(parser: argparse.ArgumentParser, argv: list[str]) -> dict[str, Any]:
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(argv)
    except SystemExit as exc:
        lines = [line for line in err.getvalue().splitlines() if line.strip()]
        return {"argv": argv, "accepted": exc.code in (0, None), "error": (lines or [""])[-1]}
    except Exception as exc:  # a type converter or a config reader raising
        return {"argv": argv, "accepted": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
    return {"argv": argv, "accepted": True, "error": ""}


def value_for(parser: argparse.ArgumentParser, option: str) -> list[str] | None:
    """A value this release's parser accepts for ``option`` ([] for none), or None when
    no candidate is accepted."""
    action = parser._option_string_actions.get(option)
    if action is None:
        return None
    if action.nargs == 0:
        return []
    if action.choices:
        return [str(next(iter(action.choices)))]
    for candidate in CANDIDATES:
        if judge(parser, [*MODEL, option, candidate])["accepted"]:
            return [candidate]
    return None


def cpu_platform() -> str:
    """From 0.10 the engine's options are read from its config classes, whose defaults ask
    vLLM for the platform; with no GPU and a CUDA build that is "Failed to infer device
    type". vLLM's own CPU platform is then set before the parser is built: it decides
    defaults, not which options exist (the names come from the same dataclass fields)."""
    from vllm import platforms  # noqa: PLC0415
    from vllm.platforms.cpu import CpuPlatform  # noqa: PLC0415

    platforms._current_platform = CpuPlatform()  # type: ignore[attr-defined]
    return "cpu (vllm.platforms.cpu.CpuPlatform, set: no GPU where the oracle runs)"


def main() -> None:
    request = json.load(sys.stdin)
    no_value = set(request["no_value"])
    platform = "as vLLM infers it"
    try:
        parser = build_parser()
    except RuntimeError as exc:
        if "infer device type" not in str(exc):
            raise
        platform = cpu_platform()
        parser = build_parser()
    cases = []
    for option in request["options"]:
        value = value_for(parser, option)
        if value is None:  # unknown to this release (or no value it takes): as written
            value = [] if option in no_value else ["1"]
        cases.append(judge(parser, [*MODEL, option, *value]))
        if len(value) == 1 and option.startswith("--"):
            cases.append(judge(parser, [*MODEL, f"{option}={value[0]}"]))
    for argv in request["extra"]:
        cases.append(judge(parser, [*MODEL, *argv]))
    import vllm  # noqa: PLC0415  (already imported by the parser's modules)

    answer = {"vllm": str(getattr(vllm, "__version__", "")), "platform": platform}
    json.dump({**answer, "cases": cases}, sys.stdout)


if __name__ == "__main__":
    main()
