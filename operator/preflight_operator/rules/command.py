"""Is this container running vLLM, and with which command line?

Recognised: ``vllm serve ...``, ``python[3] -m vllm.entrypoints.openai.api_server ...``
(and ``-m vllm.entrypoints.cli.main serve``), behind ``exec``, ``env A=b``, ``nohup``,
``tini --``/``dumb-init --`` and inside ``sh -c``/``bash -c`` scripts (``&&`` chains,
``;``, newlines, ``"$@"``), with command and args split or joined; and a container that
only sets ``args`` on the vLLM image (whose entrypoint is ``vllm serve``). Everything else
(sidecars, proxies, ``ray start`` workers) is not vLLM.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from preflight_contract.vllm_args import vllm_args_start
from preflight_operator.rules import shell
from preflight_operator.rules.kubeenv import ContainerEnv, expand

SHELLS = frozenset(("sh", "bash", "dash", "ash", "zsh", "ksh", "busybox"))
_WRAPPERS = frozenset(("exec", "nohup", "time", "command", "tini", "dumb-init", "--"))
_MAX_DEPTH = 4  # bash -c "sh -c '...'" nesting we follow


@dataclass(frozen=True)
class Invocation:
    """A vLLM command line found in a container.

    ``argv`` starts with the program (``vllm`` / ``python3``); ``paths[i]`` is the
    manifest path ``argv[i]`` came from (a whole script for shell commands). ``exports``
    are variables the script or command prefix puts in vLLM's environment.
    """

    argv: tuple[str, ...]
    paths: tuple[str, ...]
    shell_path: str | None = None
    exports: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Unparsed:
    """A shell script we could not tokenize: maybe vLLM, maybe not."""

    path: str
    reason: str


def is_vllm_image(image: object) -> bool:
    """The official vLLM server images, whose entrypoint is `vllm serve`."""
    if not isinstance(image, str):
        return False
    repo = image.split("@", 1)[0]
    last = repo.rsplit("/", 1)[-1].split(":", 1)[0]
    return last.startswith("vllm-openai")


def find_invocation(
    container: Mapping[str, Any], path: str, env: ContainerEnv
) -> Invocation | Unparsed | None:
    """The vLLM command line of ``container`` (at manifest ``path``), if it runs vLLM."""
    command = container.get("command")
    args = container.get("args")
    words: list[str] = []
    paths: list[str] = []
    for key, values in (("command", command), ("args", args)):
        if values is None:
            continue
        if not isinstance(values, list):
            return None
        for i, value in enumerate(values):
            # the kubelet expands $(VAR) in command and args against the final env
            words.append(expand(_text(value), env.lookup, env.budget, f"{key}[{i}]"))
            paths.append(f"{path}.{key}[{i}]")
    if not command:
        if not is_vllm_image(container.get("image")):
            return None
        image_path = f"{path}.image"
        return Invocation(
            ("vllm", "serve", *words),
            (image_path, image_path, *paths),
        )
    return _analyze(words, paths, env, {}, 0)


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _strip_wrappers(words: list[str], paths: list[str]) -> tuple[dict[str, str], int]:
    """Leading NAME=value assignments and wrapper programs; returns (assignments, start)."""
    assignments: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        base = word.rsplit("/", 1)[-1]
        if shell.is_assignment(word):
            name, _, value = word.partition("=")
            assignments[name] = value
        elif word in shell.RESERVED or base in _WRAPPERS:
            pass
        elif base == "env":
            # env [-i] [-u NAME] NAME=value... program
            while i + 1 < len(words) and words[i + 1].startswith("-"):
                i += 2 if words[i + 1] in ("-u", "--unset") else 1
        else:
            break
        i += 1
    return assignments, i


def _analyze(
    words: list[str],
    paths: list[str],
    env: ContainerEnv,
    exports: dict[str, str],
    depth: int,
) -> Invocation | Unparsed | None:
    assignments, start = _strip_wrappers(words, paths)
    words, paths = words[start:], paths[start:]
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1]
    if program in SHELLS:
        return _analyze_shell(words, paths, env, {**exports, **assignments}, depth)
    found = vllm_args_start(words)
    if found is None:
        return None
    return Invocation(tuple(words), tuple(paths), None, {**exports, **assignments})


def _analyze_shell(
    words: list[str],
    paths: list[str],
    env: ContainerEnv,
    exports: dict[str, str],
    depth: int,
) -> Invocation | Unparsed | None:
    if depth >= _MAX_DEPTH:
        return None
    script_at = _script_index(words)
    if script_at is None:
        return None
    script, script_path = words[script_at], paths[script_at]
    positional = words[script_at + 1 :]  # $0, $1, ...
    commands = shell.split_commands(script)
    if commands is None:
        return Unparsed(script_path, "the shell script does not tokenize (unbalanced quotes?)")
    shell_vars: dict[str, str] = {}
    exported = dict(exports)

    def variable(name: str) -> str | None:
        # None: not set by the spec. A plain $NAME then stays unknown (the image's ENV
        # may define it); ${NAME:-default} takes its default.
        if name in shell_vars:
            return shell_vars[name]
        return env.lookup(name)

    def expand(word: str) -> str:
        return shell.expand_word(word, variable, positional, env.budget)

    for command in commands:
        start = 0
        while start < len(command) and command[start] in shell.RESERVED:
            start += 1
        raw = command[start:]
        if not raw:
            continue
        if raw[0] == "export" or all(shell.is_assignment(w) for w in raw):
            _assign(raw, expand, env, shell_vars, exported)
            continue
        expanded: list[str] = []
        for word in raw:
            if word in ("$@", "${@}", "$*", "${*}"):
                expanded.extend(positional[1:])
            else:
                expanded.append(expand(word))
        found = _analyze(expanded, [script_path] * len(expanded), env, exported, depth + 1)
        if isinstance(found, Invocation):
            return Invocation(found.argv, found.paths, script_path, found.exports)
        if isinstance(found, Unparsed):
            return found
    return None


def _script_index(words: list[str]) -> int | None:
    """Where the script of `sh -c SCRIPT` (any shell, its options before) is, or None."""
    i = 1
    if words[0].rsplit("/", 1)[-1] == "busybox":
        i = 2  # busybox sh -c ...
    script_at = None
    while i < len(words):
        word = words[i]
        if word in ("-o", "+o"):
            i += 2
            continue
        if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
            script_at = i + 1
            break
        if not word.startswith(("-", "+")):
            break  # `bash script.sh`: a file we cannot see
        i += 1
    if script_at is not None and script_at < len(words) and words[script_at] == "--":
        script_at += 1  # `bash -lc -- "script"`: `--` ends the shell's options
    if script_at is None or script_at >= len(words):
        return None
    return script_at


def _assign(
    raw: list[str],
    expand: Callable[[str], str],
    env: ContainerEnv,
    shell_vars: dict[str, str],
    exported: dict[str, str],
) -> None:
    """`A=1 B=2` or `export A=1 B`: set the shell variables, and the exported ones."""
    export = raw[0] == "export"
    for word in raw[1:] if export else raw:
        name, eq, value = word.partition("=")
        if eq:
            shell_vars[name] = expand(value)
            if export or name in env.values:
                exported[name] = shell_vars[name]
        elif name in shell_vars:
            exported[name] = shell_vars[name]
