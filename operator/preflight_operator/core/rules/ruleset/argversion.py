"""Options the image's vLLM release does not accept (issue 38).

``vllm: error: unrecognized arguments: --X`` is the most common start-up failure after an
upgrade or a downgrade. Which options a release accepts is generated from its own source
(preflight_contract.vllm_versions, hack/vllm/gen_versions.py); the release from the image
reference (rules.vllmversion).

The docs of its rules (hack/gen_rule_docs.py renders them into docs/RULES.md):

### `vllm-args-unknown`
An option on the `vllm serve` / `python -m vllm.entrypoints.openai.api_server` command
line that the image's vLLM does not accept. Judged only where the inputs are exact: the
image is vLLM's own with a release tag (`vllm/vllm-openai:v0.6.3`, `-cu126` suffixes,
`vllm/vllm-tpu`, `vllm/vllm-openai-rocm`) and the command line was read exactly; an
option no release from 0.4.1 to 0.34.0 accepts (`--enable-metrics`) fails on every such
release (on `latest` or an unknown image a later release may have it: a warning).
Abbreviations argparse accepts (`--tensor-par`) are not refused here, but one that
abbreviates several of the release's options is (`--device` on 0.34.0: "ambiguous option:
--device could match --device-ids, --device-memory-utilization"); underscores are read as
dashes from 0.5.1 (vLLM's FlexibleArgumentParser), and refused as written before
(`--max_model_len` on 0.4.3: plain argparse); from 0.12.0 `-O 3`, `-O3` are
`--optimization-level`; from 0.33.0 every `--enable-x` switch also takes `--disable-x`
(EnableDisableAction). Each of these was found, or confirmed, by the releases' own parsers
run on generated command lines (`hack/vllm/oracle.py`, `tests/data/vllm_oracle`).
The message names the release judged and the first release that has
the option, or the closest spelling. Which release accepts what: `vllm_versions.py`,
generated from the PyPI sdists of 65 releases (every 0.4.1-0.6.6.post1 release, the last
patch of each later minor, and the releases the real-world corpus runs) by
`hack/vllm/gen_versions.py`.
*Symptom:* `vllm serve: error: unrecognized arguments: --data-parallel-size-local 2`
(`api_server.py: error: unrecognized arguments: ...` for the api_server module); the pod
crash-loops.
*Fix:* remove the option, use the spelling the release has, or run a release that has it.

### `vllm-args-version`
The image's vLLM release is not known here (`latest`, `nightly`, a digest, a custom or
vendor image, an image not named, a release between two generated ones or after them)
and a release it may be refuses an option. An image whose release is not known is taken
as one of the releases PyPI received in the year up to the newest generated one (today
0.11.1-0.34.0, from November 2025; a heuristic: the window is no measurement of what
clusters run); `latest` as the newest release or later. The warning names the releases
that refuse the option and those that accept it: `--disable-log-requests` (removed in
0.17.0, back in 0.33.0 as `--enable-log-requests`' inverse: 0.17.0-0.32.0 refuse it),
`--disable-access-log-for-endpoints` (since 0.16.0), `--swap-space` (removed after
0.17.1), an option no generated release has. Options only older releases lack
(`--data-parallel-size-local`, since 0.9.0 of May 2025) are not reported: on the
real-world corpus the year warns on 8 workloads, two years on 11, every release since
0.4.1 on 36 (22 of them for `--kv-transfer-config`, missing before
0.6.5). Where every release of the window agrees, the version does not matter and
nothing is said.
*Fix:* use a release tag of vLLM's image, or check that the image's vLLM has the option.
"""

from __future__ import annotations

from collections.abc import Iterator

from preflight_contract.verdicts import FAIL, WARN
from preflight_contract.vllm_args import API_SERVER, SERVE, vllm_args_start
from preflight_operator.core.rules.certainty import ARGV, EXACT, VLLM_CODE, Basis, Input
from preflight_operator.core.rules.context import ContainerContext
from preflight_operator.core.rules.kubeenv import has_unknown
from preflight_operator.core.rules.registry import RULE_INFO, declare, register
from preflight_operator.core.rules.vllmversion import (
    NEWEST,
    RECENT_TEXT,
    ImageVersion,
    abbreviation,
    image_version,
    judge_option,
    marker,
)
from preflight_operator.core.rules.vocabulary import Finding, Policy

_OPENAI_MODULE = "vllm.entrypoints.openai.api_server"
_MAX_TOKENS = 4096


def written_options(argv: tuple[str, ...]) -> tuple[str, list[tuple[int, str]]] | None:
    """(program name as vLLM prints it, [(argv index, option string)]) of a vLLM server
    command line whose parser the table describes; None for other entry points (Dynamo's
    worker, the old demo ``vllm.entrypoints.api_server``: their options are their own)."""
    start = vllm_args_start(argv)
    if start is None:
        return None
    index, entry = start
    if entry == API_SERVER:
        if not any(w in (_OPENAI_MODULE, "-m" + _OPENAI_MODULE) for w in argv[:index]):
            return None
        program = "api_server.py"
    elif entry == SERVE:
        program = "vllm serve"
        index += 1  # the `serve` word
    else:
        return None
    found: list[tuple[int, str]] = []
    for i in range(index, min(len(argv), _MAX_TOKENS)):
        word = argv[i]
        if word == "--":
            break
        if not word.startswith("-") or word == "-" or " " in word or has_unknown(word):
            continue
        if word[1:2].isdigit() or word[1:2] == ".":
            continue  # a negative number: argparse reads it as a value
        name = word.split("=", 1)[0]
        if name.startswith("--"):
            # `--compilation-config.mode 3`: FlexibleArgumentParser's dotted keys of a
            # JSON option; judged by the option (a release without them: a missed fail)
            name = "--" + name[2:].split(".", 1)[0]
        found.append((i, name))
    return program, found


# vLLM's FlexibleArgumentParser reads `--max_model_len` as `--max-model-len` (the generated
# marker: 0.5.1 on); before, argparse refuses the underscore spelling
_UNDERSCORES = "Underscores read as dashes"


_OPTIMIZATION = "-O read as --optimization-level"


def as_parsed(name: str, version: ImageVersion) -> str:
    """The option string the release's parser looks up: underscores as dashes, unless the
    release is known not to convert them (then the spelling as written); ``-O3``, ``-O 3``
    as ``--optimization-level`` where FlexibleArgumentParser rewrites them (0.12.0 on;
    before, ``-O`` is an option of its own, 0.6.5-0.11.2)."""
    if name.startswith("-O") and not name.startswith("--"):
        rewritten = marker(_OPTIMIZATION, version) is not False
        return "--optimization-level" if rewritten else name
    if not name.startswith("--") or "_" not in name:
        return name
    if marker(_UNDERSCORES, version) is False:
        return name
    return "--" + name[2:].replace("_", "-")


declare(
    "vllm-args-version",
    WARN,
    "an option some vLLM releases refuse, on an image whose release is not known",
    Basis(VLLM_CODE, "each release's argparse options, from its source (vllm_versions.py)"),
    fix="use a release tag of vLLM's image, or check that its vLLM has the option",
)


@register(
    "vllm-args-unknown",
    FAIL,
    "an option the image's vLLM release does not accept",
    Basis(VLLM_CODE, "each release's argparse options, from its source (vllm_versions.py)"),
    fix="drop the option or use the spelling the image's release has (the message names it)",
)
def args_unknown(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    if not ctx.invocation.exact:
        return
    read = written_options(ctx.invocation.argv)
    if read is None:
        return
    program, options = read
    version = image_version(ctx.container.get("image"))
    serve = program == "vllm serve"
    already = {p.flag for p in ctx.parsed.problems}
    doubts: list[str] = []
    seen: set[str] = set()
    for index, written in options:
        name = as_parsed(written, version)
        if name in seen or name in already:
            continue
        seen.add(name)
        verdict = judge_option(name, version, serve)
        path = (
            ctx.invocation.paths[index] if index < len(ctx.invocation.paths) else ctx.command_path
        )
        config_format = config_as_format(ctx.invocation.argv[index], version, serve)
        if config_format is not None:
            yield RULE_INFO["vllm-args-unknown"].finding(
                f"{config_format}; vLLM exits with '{program}: error: argument "
                f"--config-format: invalid choice' ({_judged(version)})",
                path,
                "put the file's options on the command line, or use an image whose vLLM "
                "reads --config (the api_server module from 0.10.0; vllm/vllm-openai runs "
                "`vllm serve` from 0.11.1)",
                (Input(ARGV, "the vLLM options", EXACT),),
            )
            continue
        if verdict.refused:
            error = verdict.error or f"unrecognized arguments: {name}"
            detail = verdict.detail
            dashed = "--" + name[2:].replace("_", "-") if name.startswith("--") else name
            if dashed != name and not judge_option(dashed, version, serve).refused:
                detail = (
                    f"vLLM {version.release} reads no underscore spelling (from 0.5.1 its "
                    f"parser reads {name} as {dashed}); write {dashed}"
                )
            yield RULE_INFO["vllm-args-unknown"].finding(
                f"{name}: {detail}; vLLM exits with '{program}: error: "
                f"{error}' ({_judged(version)})",
                path,
                "remove the option, or use the spelling the image's release has",
                (Input(ARGV, "the vLLM options", EXACT),),
            )
        elif verdict.doubt:
            doubts.append(f"{name}: {verdict.detail}")
    if doubts:
        taken = (
            ""
            if version.known or version.newest
            else f" (taken as one of the year's releases up to {NEWEST}: {RECENT_TEXT})"
        )
        yield RULE_INFO["vllm-args-version"].finding(
            f"{version.why}: its vLLM release is not known here{taken}, and a release it "
            f"may be refuses an option: {'; '.join(doubts[:5])}"
            + (f"; and {len(doubts) - 5} more" if len(doubts) > 5 else ""),
            ctx.command_path,
            "use a release tag of vLLM's image (vllm/vllm-openai:vX.Y.Z), or check that "
            "the image's vLLM has these options",
        )


# --config-format's choices in the releases whose api_server has no --config (0.6.1-0.9.2):
# the oracle's records (tests/data/vllm_oracle, 0.6.3.post1 to 0.8.5) quote them.
_CONFIG_FORMATS = frozenset(("auto", "hf", "mistral"))


def config_as_format(word: str, version: ImageVersion, serve: bool) -> str | None:
    """Why ``--config=FILE`` fails, where it does: a release whose parser has no
    ``--config`` but ``--config-format`` (the api_server module, 0.6.1 to 0.9.2: `vllm
    serve` had its own ``--config``) takes it as argparse's abbreviation of
    ``--config-format``, whose value must be one of its choices (vLLM 0.6.3.post1, 0.7.3,
    0.8.5 themselves: tests/data/vllm_oracle). None elsewhere: there the spelling is
    accepted and ignored (vllm-args-ignored)."""
    if not word.startswith("--config="):
        return None
    value = word.split("=", 1)[1]
    if value in _CONFIG_FORMATS or abbreviation("--config", version, serve) != "--config-format":
        return None
    return (
        f"--config={value}: vLLM {version.release}'s parser has no --config (its api_server "
        f"module reads --config from 0.10.0); argparse reads --config= as an abbreviation "
        f"of --config-format, and {value!r} is not a config format"
    )


def _judged(version: object) -> str:
    release = getattr(version, "release", None)
    why = getattr(version, "why", "")
    return f"judged as vLLM {release}, {why}" if release else f"every release; {why}"
