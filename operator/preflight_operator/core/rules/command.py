"""Is this container running vLLM, and with which command line?

The container's command and args are expanded as the kubelet does (kubeenv; a ``$(NAME)``
no env of the manifest defines is *unknown*: a controller may inject it), then walked as
one command (rules.shrun): launchers in front (``timeout``, ``numactl``, ``tini -s --``,
``gosu USER``, ``uv run``, ... see rules.launchers), shell scripts (``sh -c``/``bash -c``,
read as the shell reads them, see rules.shparse), ``exec "$@"`` and ``eval``. vLLM is
``vllm serve ...``, ``python[3] -m vllm.entrypoints.openai.api_server ...``, ``python -m
vllm.entrypoints.cli.main serve ...`` (also as ``$PYTHON -m ...`` and ``uv run -m ...``,
read as not exact). A container that only sets ``args`` on the vLLM image runs ``vllm
serve`` (the image's entrypoint); on another image whose name or flags look like vLLM's it
is reported as unread (a warning), never skipped silently. Everything else (sidecars,
proxies, ``ray start`` workers) is not vLLM.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from preflight_contract.vllm_release import version_key
from preflight_operator.core.rules import shrun
from preflight_operator.core.rules.kubeenv import ContainerEnv, expand
from preflight_operator.core.rules.shrun import SHELLS, undefined_reference
from preflight_operator.core.rules.vllmversion import image_version

__all__ = ["SHELLS", "Invocation", "Unparsed", "find_invocation", "is_vllm_image"]


@dataclass(frozen=True)
class Invocation:
    """A vLLM command line found in a container.

    ``argv`` starts with the program (``vllm`` / ``python3``); ``paths[i]`` is the
    manifest path ``argv[i]`` came from (a whole script for shell commands). ``exports``
    are variables the script or command prefix puts in vLLM's environment. ``exact``: no
    word is a guess (the shell oracle holds it to what bash passes); ``conditional``: it
    runs only on some paths of the script (the only vLLM command it can run).
    """

    argv: tuple[str, ...]
    paths: tuple[str, ...]
    shell_path: str | None = None
    exports: Mapping[str, str] = field(default_factory=dict)
    exact: bool = True
    conditional: bool = False


@dataclass(frozen=True)
class Unparsed:
    """A command we could not read with certainty: maybe vLLM, maybe not.

    ``suspected``: it looks like vLLM although nothing in it says so by name (an args-only
    container on an unknown image): reported even without the word "vllm"."""

    path: str
    reason: str
    suspected: bool = False


# The ENTRYPOINT of vLLM's own server images (vllm/vllm-openai and its -cpu, -rocm, -xpu
# variants), which a container that sets only `args` runs them after: `python3 -m
# vllm.entrypoints.openai.api_server` up to 0.11.0, `vllm serve` from 0.11.1, read from
# each release's Dockerfiles in its sdist (tests/data/vllm_images/entrypoints.json, written
# by hack/vllm/image_entrypoints.py; tests/unit/test_image_entrypoints.py holds this to it).
# Before 0.6.2 the sdists ship no Dockerfile; the repository's of that time
# (vllm-project/vllm Dockerfile at 01da4491562a) has the api_server one too.
SERVE_ENTRYPOINT_SINCE = "0.11.1"
API_SERVER_ENTRYPOINT = ("python3", "-m", "vllm.entrypoints.openai.api_server")
SERVE_ENTRYPOINT = ("vllm", "serve")


def image_entrypoint(image: object) -> tuple[str, ...]:
    """The ENTRYPOINT of a vLLM server image (``is_vllm_image``): by its release where its
    tag names one; otherwise (``latest``, a digest, another registry's copy) `vllm serve`,
    the entrypoint of every release an unknown image is taken to be
    (vllmversion.RECENT, the year's releases, all from 0.11.1 on)."""
    release = image_version(image).release
    if release is not None and version_key(release) < version_key(SERVE_ENTRYPOINT_SINCE):
        return API_SERVER_ENTRYPOINT
    return SERVE_ENTRYPOINT


def is_vllm_image(image: object) -> bool:
    """The vLLM server images, whose ENTRYPOINT runs vLLM (``image_entrypoint``)."""
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

    def reference(name: str) -> str | None:
        # The kubelet leaves an undefined $(NAME) literally; a controller or admission
        # webhook may define it before the pod starts (an Indexed Job's
        # JOB_COMPLETION_INDEX, KServe's TENSOR_PARALLEL_SIZE): unknown, never wrong.
        value = env.lookup(name)
        if value is None and _ENV_NAME.fullmatch(name):
            return undefined_reference(name)
        return value

    for key, values in (("command", command), ("args", args)):
        if values is None:
            continue
        if not isinstance(values, list):
            return None
        for i, value in enumerate(values):
            # the kubelet expands $(VAR) in command and args against the final env
            words.append(expand(_text(value), reference, env.budget, f"{key}[{i}]"))
            paths.append(f"{path}.{key}[{i}]")
    if not command:
        return _args_only(container, words, paths, path)
    return _analyze(words, paths, env)


# What the API server accepts as an env var name (validation.IsEnvVarName)
_ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")


def _args_only(
    container: Mapping[str, Any], words: list[str], paths: list[str], path: str
) -> Invocation | Unparsed | None:
    """A container that sets only ``args``: the image's entrypoint runs them."""
    image = container.get("image")
    image_path = f"{path}.image"
    if is_vllm_image(image):
        entrypoint = image_entrypoint(image)
        return Invocation((*entrypoint, *words), (image_path,) * len(entrypoint) + tuple(paths))
    hint = _looks_like_vllm(image, words)
    if hint is None:
        return None
    return Unparsed(
        paths[0] if paths else image_path,
        f"the image {image!r} is not one whose entrypoint vllm-preflight knows, but {hint}: "
        "if it runs `vllm serve`, its arguments were not checked",
        suspected=True,
    )


_VLLM_FLAGS = frozenset(
    (
        "--model",
        "--tensor-parallel-size",
        "-tp",
        "--pipeline-parallel-size",
        "-pp",
        "--served-model-name",
        "--max-model-len",
        "--gpu-memory-utilization",
        "--data-parallel-size",
        "-dp",
    )
)


def _looks_like_vllm(image: object, words: list[str]) -> str | None:
    """Why an args-only container looks like vLLM (its image name, its flags), or None."""
    name = image.split("@", 1)[0].rsplit("/", 1)[-1] if isinstance(image, str) else ""
    flags = [w.split("=", 1)[0] for w in words if w.startswith("-")]
    known = sorted({f for f in flags if f in _VLLM_FLAGS})
    if "vllm" in name.lower() and (known or (words[:1] == ["serve"])):
        return f"its image is named {name!r} and its args look like vLLM's"
    if len(known) >= 2:
        return f"its args use vLLM's options {', '.join(known)}"
    return None


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _analyze(words: list[str], paths: list[str], env: ContainerEnv) -> Invocation | Unparsed | None:
    """Walk the container's command (and any script it starts) for its vLLM command."""
    events: list[shrun.Found | shrun.Doubt] = []
    runner = shrun.Runner(env.lookup, env.budget, events)
    runner.mentions = tuple(v for v in env.values.values() if "vllm" in v)
    if env.open_ended:
        runner.mentions += ("vllm: an envFrom source not read here may name it",)
    runner.run_argv(words, {}, offset=0)
    found = shrun.resolve(events)
    if found is None:
        return None
    script_at = _script_word(words)
    script_path = paths[script_at] if script_at is not None else (paths[-1] if paths else "")
    if isinstance(found, shrun.Doubt):
        return Unparsed(script_path, found.reason)
    if found.offset is not None:
        argv_paths = tuple(paths[found.offset : found.offset + len(found.argv)])
        if len(argv_paths) == len(found.argv):
            return Invocation(
                found.argv, argv_paths, None, dict(found.exports), found.exact, found.conditional
            )
    return Invocation(
        found.argv,
        (script_path,) * len(found.argv),
        script_path,
        dict(found.exports),
        found.exact,
        found.conditional,
    )


def _script_word(words: list[str]) -> int | None:
    """The index of the (first) shell script among the container's words, if any."""
    for i, word in enumerate(words):
        if word.rsplit("/", 1)[-1] in shrun.SHELLS:
            at = shrun.script_index(words[i:])
            if at is not None:
                return i + at
        if word == "-c" and i > 0 and words[i - 1].rsplit("/", 1)[-1] == "su":
            return i + 1 if i + 1 < len(words) else None
    for i, word in enumerate(words):
        if word in ("-c", "--command") and i + 1 < len(words):
            return i + 1
    return None
