"""Does this container run vLLM? Decided apart from whether its command line can be read.

The reader (rules.command, rules.shrun) answers "which vLLM command line": where it cannot
read one (an argv built at run time with ``set --`` and ``exec vllm "$@"``, ``... | xargs
vllm``, a script written by a here-document and then run, an ``envFrom`` source that is
not in the manifest set) it returns nothing, and a container it returns nothing for used
to be dropped: ``lint`` said "no vLLM workloads found" and exited 0, JSON, SARIF and JUnit
left it out, admission said nothing (issue 35). Silence is a bypass. So recognition is its
own pure function, over every signal the manifest gives, and the engine names a container
it recognises but cannot read as *unjudged*, with the signal and what was not read.

A signal is evidence that vLLM is *launched* here, not that vLLM is mentioned: a sidecar
whose env holds ``http://vllm:8000``, a client that runs ``curl http://vllm:8000/v1/models``
or waits with ``nc -z vllm 8000`` is not a vLLM server and is not recognised. The signals:

* ``entrypoint``: the command, args (or a script in them) start vLLM: the word ``vllm`` in
  a command position (first word, after ``exec``, ``xargs``, ``nohup``, ``;``, ``&&``,
  ``|``...) or followed by ``serve``, ``"$@"`` or a variable; ``python -m vllm...``;
  ``vllm.entrypoints``; ``from vllm``/``import vllm`` in a Python script. Not ``vllm chat``,
  ``vllm complete``, ``vllm bench serve`` or ``vllm --version`` (clients, not servers).
* ``env``: an env value of the container holds such an entrypoint (``CMD="vllm serve ..."``).
* ``image``: the image is one of vLLM's server images (``vllm/vllm-openai``, the platform
  images of rules.accelerators) and the command does not run a program known not to be
  vLLM (``sleep``, ``ray``, ``curl``, ...): the image's whole purpose is vLLM.
* ``options``: the command or args use two or more of vLLM's own options beyond ``--model``
  (``--tensor-parallel-size``, ``--gpu-memory-utilization``, ...), or the args start with
  vLLM's ``serve`` and use one of them (an entrypoint script of the image's own, given
  vLLM's arguments: issue 36).
* ``stack``: the pod was built from a serving stack's object whose controller runs vLLM
  (the kind's reader synthesised its command line).

Bounded: each text is read up to MAX_TEXT characters, each pattern at most MAX_MATCHES times
with at most 200 characters looked back (a first version was quadratic: 12.7 s for 240 KB
of `-exec`; now 0.03 s).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Any

from preflight_operator.core.rules.accelerators import image_platform
from preflight_operator.core.rules.command import _VLLM_FLAGS, is_vllm_image

__all__ = ["MAX_TEXT", "Signal", "describe", "recognise", "unread_parts"]

# characters of one field read: a vLLM launch is in the first 64 KiB of any script seen;
# a hostile one costs at most this (tests/unit/test_rules_recognition.py times the worst)
MAX_TEXT = 64 * 1024

ENTRYPOINT, ENV, IMAGE, OPTIONS, STACK = "entrypoint", "env", "image", "options", "stack"


@dataclass(frozen=True)
class Signal:
    """One piece of evidence that a container launches vLLM: which kind of signal, the
    manifest field it is in and what it says (for the finding's message)."""

    kind: str
    field: str
    detail: str

    def text(self) -> str:
        return f"{self.detail} ({self.field})" if self.field else self.detail


# `vllm` as a program: after a command separator or a launcher word (optionally with a
# path in front, never a URL), and not followed by a character that makes it a host name,
# a module or a longer word.
_SEP = r"(?:^|[;&|(`\n]|\$\()[ \t]*"
_LAUNCHER = (
    r"(?<![\w./-])(?:exec|xargs|nohup|command|then|do|else|time|sudo)[ \t]+(?:-\S+[ \t]+){0,8}"
)
_PROGRAM = re.compile(
    rf"""(?:{_SEP}|{_LAUNCHER})["']?(?:\.{{0,2}}/[\w./-]*/)?vllm["']?(?=[ \t\n;&|)`]|$)""",
    re.MULTILINE,
)
# `vllm` followed by what only a vLLM launch takes: `serve`, the script's "$@", a variable
_LAUNCH = re.compile(
    r"""(?<![\w.:/@-])["']?vllm["']?[ \t]+(?:serve\b|run-batch\b|"?\$[@*{A-Za-z_]|'?serve\b)"""
)
# a command that prints its words (echo, printf, `:`): vLLM named in it is not run
_PRINTED = re.compile(r"""(?:^|[ \t(])(?:echo|printf|:)[ \t]""")
_SEGMENT = re.compile(r"[;&|(\n]")
# matches of one pattern looked at before giving up (each costs at most 200 characters)
MAX_MATCHES = 256
_CLIENT = re.compile(
    r"""vllm["']?[ \t]+["']?(?:chat|complete|collect-env|--version|-v\b|--help|-h\b|"""
    r"""bench[ \t]+serve)"""
)
_PYTHON = re.compile(
    r"""(?:-m[ \t]+["']?vllm(?:\.|\b)|\bvllm\.entrypoints\b|^[ \t]*(?:from|import)[ \t]+vllm\b)""",
    re.MULTILINE,
)
# programs that are known not to be vLLM: a container of a vLLM image that runs one of
# these is a download, a Ray worker or a debugging pod
_NOT_VLLM = frozenset(
    (
        "sleep",
        "tail",
        "true",
        "cat",
        "echo",
        "ray",
        "curl",
        "wget",
        "nvidia-smi",
        "huggingface-cli",
        "hf",
        "pip",
        "pip3",
        "ls",
        "cp",
        "mv",
        "rm",
        "mkdir",
        "chmod",
        "chown",
    )
)
# a Ray worker of a multi-node vLLM (its head runs vLLM, the rules judge the group there)
_RAY_WORKER = re.compile(r"\bray[ \t]+start\b|RAY_START_CMD|multi-node-serving\.sh[ \t]+worker\b")
# another inference engine, some of whose options are vLLM's (SGLang's
# --tensor-parallel-size), or KServe's huggingfaceserver told to use Transformers
_OTHER_ENGINE = re.compile(
    r"sglang|text-generation-launcher|tensorrt_llm|trtllm|lmdeploy|llama-server|llama_cpp"
    r"|ollama|--backend[= ]+[\"']?huggingface"
)
_STRONG_OPTIONS = _VLLM_FLAGS - {"--model", "--served-model-name"}


def _launches(text: str, strict: bool = False) -> str | None:
    """How ``text`` (a command line, a script) launches vLLM, or None. ``strict`` (an env
    value): only what says so itself (``vllm serve``, ``python -m vllm``), never a bare
    ``vllm``, which in a value is a name (``INFERENCE_ENGINE=vllm``)."""
    text = text[:MAX_TEXT]
    if _PYTHON.search(text):
        return "it runs vLLM's Python module"
    for pattern in (_LAUNCH,) if strict else (_LAUNCH, _PROGRAM):
        for match in islice(pattern.finditer(text), MAX_MATCHES):
            rest = text[match.start() : match.end() + 40]
            word = rest.lower().find("vllm")
            if word >= 0 and _CLIENT.match(rest[word:]):
                continue  # a vLLM client command (vllm chat, vllm bench serve)
            at = match.start() + max(word, 0)
            if _printed(text[max(0, at - 200) : at]):
                continue  # `echo vllm serve ...`: printed, not run
            return "it runs `vllm`"
    return None


def _printed(before: str) -> bool:
    """Whether the command in which vLLM is named (``before`` it, back to the last
    command separator) prints its words."""
    starts = [m.end() for m in _SEGMENT.finditer(before)]
    return _PRINTED.search(before[starts[-1] if starts else 0 :]) is not None


def _words(container: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, text) of every command and args word (a string where a list belongs, which
    the API server refuses and the reader skips, as one word: lint still names it)."""
    out: list[tuple[str, str]] = []
    for key in ("command", "args"):
        values = container.get(key)
        if isinstance(values, str):
            out.append((key, values[:MAX_TEXT]))
        elif isinstance(values, list):
            for i, value in enumerate(values):
                if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                    out.append((f"{key}[{i}]", str(value)[:MAX_TEXT]))
    return out


def _program(container: Mapping[str, Any]) -> str | None:
    command = container.get("command")
    if isinstance(command, list) and command and isinstance(command[0], str):
        return command[0].rsplit("/", 1)[-1]
    return None


def recognise(
    container: Mapping[str, Any],
    path: str = "",
    env: Mapping[str, str] | None = None,
    *,
    stack: str | None = None,
) -> tuple[Signal, ...]:
    """Every signal that ``container`` (at manifest ``path``) launches vLLM; () when none.

    ``env``: the container's env values as far as the manifest tells (names to values);
    ``stack``: the kind of the serving stack the pod was built from, when its reader
    synthesised the command. Never reads whether the command line itself can be parsed.
    """
    at = f"{path}." if path else ""
    signals: list[Signal] = []
    words = _words(container)
    # one command line, as the kubelet passes it (a script word keeps its own lines)
    line = " ".join(text for _, text in words)
    # and each script word on its own (`sh -c "vllm --model m"`: vLLM is its first word)
    scripts = [(f, t) for f, t in words if any(c in t for c in " \t\n")]
    # another engine named: the options and the stack's default say nothing of vLLM
    other = _OTHER_ENGINE.search(line[:MAX_TEXT])
    if stack and not other:
        signals.append(Signal(STACK, path, f"{stack} is a serving stack that runs vLLM"))
    how = _launches(line) or next((h for _, t in scripts if (h := _launches(t))), None)
    if how is not None:
        field = next((f for f, t in words if _launches(t)), words[0][0] if words else "")
        signals.append(Signal(ENTRYPOINT, at + field, how))
    for name, value in sorted((env or {}).items()):
        if isinstance(value, str) and _launches(value, strict=True):
            signals.append(Signal(ENV, f"{at}env[{name}]", f"env {name} launches vLLM"))
            break
    image = container.get("image")
    if (
        isinstance(image, str)
        and (is_vllm_image(image) or image_platform(image) is not None)
        and _program(container) not in _NOT_VLLM
        and not _RAY_WORKER.search(line[:MAX_TEXT])
    ):
        signals.append(Signal(IMAGE, at + "image", f"the image {image[:200]!r} is vLLM's"))
    tokens = {w.split("=", 1)[0] for _, text in words for w in text.split()}
    options = sorted(tokens & _STRONG_OPTIONS)
    args = container.get("args")
    # an entrypoint script handed vLLM's own subcommand and options (`args: [serve, M,
    # --tensor-parallel-size, 8]` on an image of its own): the script passes them to vLLM
    given_serve = isinstance(args, list) and args[:1] == ["serve"] and bool(options)
    if (len(options) >= 2 or given_serve) and not other:
        field = next(
            (f for f, t in words if {w.split("=", 1)[0] for w in t.split()} & _STRONG_OPTIONS), ""
        )
        signals.append(Signal(OPTIONS, at + field, f"vLLM's options {', '.join(options)}"))
    return tuple(signals)


def describe(signals: Iterable[Signal]) -> str:
    """The signals in one phrase, for a finding."""
    return "; ".join(s.text() for s in signals)


def unread_parts(container: Mapping[str, Any], open_ended: Iterable[str] = ()) -> list[str]:
    """What in the container's command is built at run time, so cannot be read from the
    manifest: each a phrase naming it (the finding says exactly what was not read)."""
    text = " ".join(t for _, t in _words(container))[:MAX_TEXT]
    parts: list[str] = []
    found = [(why, re.search(pattern, text)) for why, pattern in _UNREAD]
    parts += [why.format(_quote(m.group(0))) for why, m in found if m is not None]
    parts += [f"envFrom {source}, which is not in the manifest set" for source in open_ended]
    return parts


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= 60 else text[:59] + "\u2026")


# (phrase, pattern) of run-time constructs the finding names, with the text matched
_UNREAD: tuple[tuple[str, str], ...] = (
    ("a script written by a here-document and then run ({})", r"<<-?\s*['\"]?\w+['\"]?"),
    ("arguments piped to xargs ({})", r"\|\s*xargs\b[^;&|\n]*"),
    ("an argument list built at run time ({})", r"\bset\s+--[^;&|\n]*|\"?\$(?:@|\{@\}|\*)\"?"),
    ("a command substitution ({})", r"\$\((?!\()[^)]*\)?|`[^`]*`?"),
    (
        "a script file that is not in the manifest ({})",
        r"(?<![\w/.:-])(?:\.{0,2}/)?[\w./-]+\.(?:sh|py)\b",
    ),
)
