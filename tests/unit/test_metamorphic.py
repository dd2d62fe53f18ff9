"""Metamorphic tests (issue 24 item 9): rewrites of a manifest that change nothing vLLM or
Kubernetes does must not change a known verdict.

For every vLLM workload of the corpora (tests/data/realworld, tests/data/manifests), and a
twin of each passing multi-GPU workload with one GPU fewer (a known failure: the corpus has
few, and a bypass needs one), each transformation below rewrites the manifest set into one
that runs the same vLLM command on the same devices: the command run by `sh -c` in a shell
idiom and launcher of test_shell_oracle (which checks them against bash and dash), its
words quoted single, double or bare, with line continuations; one value read from
`"$VAR"` (env from a ConfigMap or a literal); `--flag=value` <-> `--flag value`, short <->
long names, `_` <-> `-`; the words cut elsewhere between command and args; flags moved
into a `--config` file from a ConfigMap mounted in the pod, or values into `$(VAR)` from a
ConfigMap (configMapKeyRef or envFrom); flags reordered (where none is given twice);
`vllm`/`python3` by absolute path; device quantities as int or string, requests equal to
limits added; a sidecar, an init container and a native sidecar added; the container
renamed (core kinds); Deployment <-> StatefulSet <-> Pod; unrelated objects added. The
relation checked:

- a known pass or warn never becomes fail (a false denial under Enforce);
- a fail never becomes pass (a bypass);
- silence is a violation (issue 35): a container recognised as vLLM before the rewrite
  still has a result after it, and one that becomes unjudged (its vLLM command line not
  read) has a finding that says why.

A fail or pass may become warn or unjudged: the rewrite may hide what the reader needs.

Each transformation runs once on every workload; then Hypothesis draws two or three in a
row, with their parameters, per workload (METAMORPHIC_EXAMPLES, default 20). The run
is derandomized (the same examples every run), and a failure prints the falsifying example
(workload, transformation names, seed) and a `@reproduce_failure` blob. Set
METAMORPHIC_SEED=N to explore other examples, METAMORPHIC_EXAMPLES=N for more of them.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import random
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hseed
from hypothesis import strategies as st
from test_shell_oracle import IDIOMS, LAUNCHERS

from preflight_contract import vllm_args as va
from preflight_contract.verdicts import FAIL, PASS
from preflight_contract.vllm_args import options as vo
from preflight_operator.cli import manifests
from preflight_operator.core.rules import UNJUDGED, ContainerResult, vllmversion
from preflight_operator.core.rules.engine import check_objects
from preflight_operator.core.rules.vllmversion import image_version, judge_option

DATA = Path(__file__).parents[1] / "data"
CORPORA = (DATA / "realworld", DATA / "manifests")
EXAMPLES = int(os.environ.get("METAMORPHIC_EXAMPLES", "20"))
SEED = os.environ.get("METAMORPHIC_SEED")

Objects = list[dict[str, Any]]


# -- the corpus ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    source: str
    objects: tuple[Any, ...]
    index: int  # the workload's object in ``objects``
    container: str  # the container's own name
    label: str  # the result's container label ("leader/vllm")
    verdict: str

    def __str__(self) -> str:
        return f"{self.source}:{self.index}:{self.label}"


def _results(objects: Objects) -> dict[tuple[int, str], str]:
    return {key: r.verdict for key, r in _by_container(objects).items()}


def _by_container(objects: Objects) -> dict[tuple[int, str], ContainerResult]:
    return {
        (r.object_index if r.object_index is not None else -1, r.container): r
        for r in check_objects(objects)
    }


def _load(path: Path) -> list[Any]:
    problems: list[manifests.Problem] = []
    return [dict(s.obj) for s in manifests.read_all([str(path)], problems)]


def corpus_cases() -> list[Case]:
    cases = []
    for root in CORPORA:
        for path in sorted(root.rglob("*.yaml")):
            objects = _load(path)
            if not objects:
                continue
            source = str(path.relative_to(DATA))
            for result in check_objects(objects):
                if result.object_index is None:
                    continue
                label = result.container
                name = label.rsplit("/", 1)[-1]
                case = Case(
                    source, tuple(objects), result.object_index, name, label, result.verdict
                )
                cases.append(case)
                short = _short_of(case, result.gpus_needed, result.gpus_requested)
                if short is not None:
                    cases.append(short)
    return cases


def _short_of(case: Case, need: int | None, have: int | None) -> Case | None:
    """The workload with one device fewer than it needs: a known failure (a bypass test
    needs failures, and the corpus has few)."""
    if case.verdict != PASS or not need or need < 2 or have != need:
        return None
    objs = copy.deepcopy(list(case.objects))
    changed = False
    for _, container in targets(objs[case.index], case.container):
        limits = (container.get("resources") or {}).get("limits") or {}
        for key in ("nvidia.com/gpu", "amd.com/gpu"):
            if str(limits.get(key)) == str(need):
                limits[key] = need - 1
                requests = container["resources"].get("requests") or {}
                if key in requests:
                    requests[key] = need - 1
                changed = True
    if not changed:
        return None
    verdict = _results(objs).get((case.index, case.label))
    if verdict != FAIL:
        return None
    return Case(
        case.source + " (one GPU short)", tuple(objs), case.index, case.container, case.label, FAIL
    )


# -- where the containers are ----------------------------------------------------------------

CORE_KINDS = {"Deployment", "StatefulSet", "Pod", "Job", "DaemonSet", "ReplicaSet"}


def pod_specs(obj: Any) -> Iterator[dict[str, Any]]:
    """Every pod spec inside an object (a mapping with a ``containers`` list)."""
    if isinstance(obj, dict):
        if isinstance(obj.get("containers"), list):
            yield obj
        for value in obj.values():
            yield from pod_specs(value)
    elif isinstance(obj, list):
        for item in obj:
            yield from pod_specs(item)


def targets(obj: Any, name: str) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(pod spec, container) for each container called ``name`` in the object."""
    for spec in pod_specs(obj):
        for c in spec["containers"]:
            if isinstance(c, dict) and c.get("name") == name:
                yield spec, c


def _words(value: Any) -> list[str] | None:
    if value is None:
        return []
    if isinstance(value, list) and all(isinstance(w, str) for w in value):
        return list(value)
    return None


def _namespace(obj: dict[str, Any]) -> str | None:
    meta = obj.get("metadata")
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    return ns if isinstance(ns, str) else None


def _config_map(obj: dict[str, Any], name: str, data: dict[str, str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    ns = _namespace(obj)
    if ns is not None:
        meta["namespace"] = ns
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


# -- vLLM's options, as groups of tokens ----------------------------------------------------

_VALUED = (
    {n for o in vo._TRACKED if o.kind in (vo._INT, vo._FLOAT, vo._STR) for n in o.names}
    | set(vo._OTHER_LONG)
    | set(vo._OTHER_SHORT_WITH_VALUE)
)
_NO_VALUE = (
    {n for o in vo._TRACKED if o.kind in (vo._BOOL, vo._FLAG) for n in o.names}
    | {"--no-" + o.names[0][2:] for o in vo._TRACKED if o.kind == vo._BOOL}
    | set(vo._OTHER_NO_VALUE)
)
_MANY = set(vo._OTHER_MANY_VALUES)
_LONG_OF = {n: o.names[0] for o in vo._TRACKED for n in o.names[1:]}
_SHORT_OF = {o.names[0]: o.names[1] for o in vo._TRACKED if len(o.names) > 1}
_DEST = {n: o.dest for o in vo._TRACKED for n in o.names}


@dataclass
class Group:
    """One token run of vLLM's arguments: a flag with its values, or a positional."""

    flag: str | None  # the spelling as written (no "=value"); None for a positional
    values: list[str]
    eq: bool = False  # written as --flag=value

    def tokens(self) -> list[str]:
        if self.flag is None:
            return list(self.values)
        if self.eq:
            return [f"{self.flag}={self.values[0]}"]
        return [self.flag, *self.values]

    @property
    def key(self) -> str:
        """The flag's canonical long spelling (dashes, long name)."""
        assert self.flag is not None
        flag = self.flag
        if flag.startswith("--"):
            flag = "--" + flag[2:].replace("_", "-")
        flag = _LONG_OF.get(flag, flag)
        if flag.startswith("--no-") and flag in _NO_VALUE:
            return "--" + flag[5:]
        return flag


def _canon(flag: str) -> str:
    return "--" + flag[2:].replace("_", "-") if flag.startswith("--") else flag


def parse_groups(tokens: list[str]) -> list[Group] | None:
    """vLLM's arguments as groups; None where any token's arity is unknown here."""
    out: list[Group] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.startswith("--") and "=" in tok:
            flag, value = tok.split("=", 1)
            if _canon(flag) not in _VALUED:
                return None
            out.append(Group(flag, [value], eq=True))
            i += 1
        elif _canon(tok) in _NO_VALUE:
            out.append(Group(tok, []))
            i += 1
        elif _canon(tok) in _VALUED:
            if i + 1 >= len(tokens):
                return None
            out.append(Group(tok, [tokens[i + 1]]))
            i += 2
        elif _canon(tok) in _MANY:
            j = i + 1
            while j < len(tokens) and not tokens[j].startswith("-"):
                j += 1
            if j == i + 1:
                return None
            out.append(Group(tok, tokens[i + 1 : j]))
            i = j
        elif tok.startswith("-"):
            return None  # an option whose arity is not known here
        else:
            out.append(Group(None, [tok]))
            i += 1
    return out


@dataclass
class Argv:
    """A container's command line split into what runs vLLM and vLLM's own arguments."""

    prefix: list[str]  # the program ("vllm", "serve") or nothing (the image's entrypoint)
    groups: list[Group]
    has_command: bool

    def tokens(self) -> list[str]:
        return self.prefix + [t for g in self.groups for t in g.tokens()]


def read_argv(container: dict[str, Any]) -> Argv | None:
    command, args = _words(container.get("command")), _words(container.get("args"))
    if command is None or args is None:
        return None
    if command:
        full = command + args
        start = va.vllm_args_start(full)
        if start is None:
            return None
        cut = start[0] + (1 if start[1] == va.SERVE else 0)
        groups = parse_groups(full[cut:])
        return None if groups is None else Argv(full[:cut], groups, True)
    if not args:
        return None
    start = va.vllm_args_start(args)
    cut = 0 if start is None else start[0] + (1 if start[1] == va.SERVE else 0)
    groups = parse_groups(args[cut:])
    return None if groups is None else Argv(args[:cut], groups, False)


def write_argv(container: dict[str, Any], argv: Argv, split: int | None = None) -> None:
    """Put the tokens back: command + args when the container had a command (split at
    ``split``, else where it was), args alone when it ran the image's entrypoint."""
    tokens = argv.tokens()
    if not argv.has_command:
        container["args"] = tokens
        return
    if split is None:
        split = len(_words(container.get("command")) or [])
    split = max(1, min(split, len(tokens)))
    container["command"] = tokens[:split]
    if tokens[split:]:
        container["args"] = tokens[split:]
    else:
        container.pop("args", None)


def _plain(value: str) -> bool:
    """A value a rewrite may move: no Kubernetes reference, no unknown mark, no option."""
    return "$(" not in value and "\x00" not in value and not value.startswith("-")


# -- transformations -------------------------------------------------------------------------
#
# Each takes (objects, the workload's index, its container's name, a Random) and rewrites
# the objects in place; it returns the container's new name, or None where it does not
# apply (no command line, a kind it cannot convert...).

Transform = Callable[[Objects, int, str, random.Random], "str | None"]
TRANSFORMS: dict[str, Transform] = {}


def transform(name: str) -> Callable[[Transform], Transform]:
    def register(fn: Transform) -> Transform:
        TRANSFORMS[name] = fn
        return fn

    return register


def _each_argv(
    objs: Objects, index: int, name: str, edit: Callable[[Argv, dict[str, Any]], bool]
) -> str | None:
    """Apply ``edit`` to every readable command line of the container; it says whether
    it changed anything."""
    changed = False
    for spec, container in targets(objs[index], name):
        argv = read_argv(container)
        if argv is not None and edit(argv, spec):
            write_argv(container, argv)
            changed = True
    return name if changed else None


@transform("flag-equals")
def flag_equals(objs: Objects, index: int, name: str, rng: random.Random) -> str | None:
    """`--flag=value` <-> `--flag value` (long flags with one value)."""

    def edit(argv: Argv, _: dict[str, Any]) -> bool:
        done = False
        for g in argv.groups:
            if (
                g.flag
                and g.flag.startswith("--")
                and len(g.values) == 1
                and _canon(g.flag) in _VALUED
                and g.key != "--config"  # vLLM reads only `--config FILE` (vllm-args-ignored)
                and (g.eq or not g.values[0].startswith("-"))
                and rng.random() < 0.7
            ):
                g.eq = not g.eq
                done = True
        return done

    return _each_argv(objs, index, name, edit)


@transform("short-long")
def short_long(objs: Objects, index: int, name: str, rng: random.Random) -> str | None:
    """`-tp` <-> `--tensor-parallel-size` (the aliases vLLM registers), and `_` <-> `-`
    in long names (vLLM's parser reads both from 0.5.1; before, plain argparse refuses the
    underscore spelling, as vLLM 0.4.3's own parser shows: tests/data/vllm_oracle, so no
    such rewrite on an image of those releases)."""
    images = [c.get("image") for _, c in targets(objs[index], name)]
    underscores = all(
        vllmversion.marker("Underscores read as dashes", vllmversion.image_version(i)) is not False
        for i in images
    )

    def edit(argv: Argv, _: dict[str, Any]) -> bool:
        done = False
        for g in argv.groups:
            if g.flag is None or rng.random() < 0.3:
                continue
            if g.flag in _LONG_OF and not g.eq:
                g.flag = _LONG_OF[g.flag]
            elif _canon(g.flag) in _SHORT_OF and not g.eq:
                g.flag = _SHORT_OF[_canon(g.flag)]
            elif (
                underscores and g.flag.startswith("--") and "-" in g.flag[2:] and rng.random() < 0.5
            ):
                g.flag = "--" + g.flag[2:].replace("-", "_")
            elif g.flag.startswith("--") and "_" in g.flag:
                g.flag = _canon(g.flag)
            else:
                continue
            done = True
        return done

    return _each_argv(objs, index, name, edit)


@transform("reorder")
def reorder(objs: Objects, index: int, name: str, rng: random.Random) -> str | None:
    """Flags shuffled among the flag slots (positionals stay where they are); only where
    no option is given twice (then the last one wins and order matters)."""

    def edit(argv: Argv, _: dict[str, Any]) -> bool:
        slots = [i for i, g in enumerate(argv.groups) if g.flag is not None]
        keys = [argv.groups[i].key for i in slots]
        if len(slots) < 2 or len(set(keys)) != len(keys):
            return False
        flags = [argv.groups[i] for i in slots]
        rng.shuffle(flags)
        for i, g in zip(slots, flags, strict=True):
            argv.groups[i] = g
        return True

    return _each_argv(objs, index, name, edit)


@transform("command-args-split")
def command_args_split(objs: Objects, index: int, name: str, rng: random.Random) -> str | None:
    """The same words, cut at another place between command and args."""
    changed = False
    for _, container in targets(objs[index], name):
        command, args = _words(container.get("command")), _words(container.get("args"))
        if not command or args is None or len(command) + len(args) < 2:
            continue
        full = command + args
        split = rng.randint(1, len(full))
        container["command"] = full[:split]
        if full[split:]:
            container["args"] = full[split:]
        else:
            container.pop("args", None)
        changed = True
    return name if changed else None


@transform("env-from-configmap")
def env_from_configmap(objs: Objects, index: int, name: str, rng: random.Random) -> str | None:
    """A flag's value replaced by `$(VAR)`, VAR from a ConfigMap in the set (a
    configMapKeyRef or envFrom); Kubernetes expands it in command and args."""
    added: list[dict[str, Any]] = []
    done = False
    for _, container in targets(objs[index], name):
        argv = read_argv(container)
        if argv is None:
            continue
        movable = [g for g in argv.groups if g.flag and len(g.values) == 1 and _plain(g.values[0])]
        if not movable:
            continue
        group = rng.choice(movable)
        var = f"MM_VALUE_{len(objs) + len(added)}"
        cm = f"mm-env-{len(objs) + len(added)}"
        added.append(_config_map(objs[index], cm, {var: group.values[0]}))
        group.values = [f"$({var})"]
        if rng.random() < 0.5:
            container.setdefault("env", [])
            container["env"] = [
                *(container["env"] or []),
                {"name": var, "valueFrom": {"configMapKeyRef": {"name": cm, "key": var}}},
            ]
        else:
            container["envFrom"] = [
                *(container.get("envFrom") or []),
                {"configMapRef": {"name": cm}},
            ]
        write_argv(container, argv)
        done = True
    objs.extend(added)
    return name if done else None


@transform("config-file")
def config_file(objs: Objects, index: int, name: str, rng: random.Random) -> str | None:
    """Flags moved into a `--config` YAML file from a ConfigMap mounted into the pod
    (vLLM reads it; the command line still wins, and no moved flag stays there)."""
    done = False
    for n, (spec, container) in enumerate(targets(objs[index], name)):
        argv = read_argv(container)
        if argv is None or any(g.flag and g.key == "--config" for g in argv.groups):
            continue
        if judge_option("--config", image_version(container.get("image")), serve=True).refused:
            continue  # the image's vLLM has no --config (before 0.6.0, issue 38)
        movable = [
            g
            for g in argv.groups
            if g.flag
            and g.key.startswith("--")
            and g.key not in ("--model", "--help")
            and not g.key.startswith("--no-")
            and g.flag not in _MANY
            and (
                (len(g.values) == 1 and _plain(g.values[0]))
                or (not g.values and _canon(g.flag) in _NO_VALUE and not g.flag.startswith("--no-"))
            )
        ]
        if not movable:
            continue
        chosen = [g for g in movable if rng.random() < 0.6] or [rng.choice(movable)]
        body = {g.key[2:]: (g.values[0] if g.values else True) for g in chosen}
        argv.groups = [g for g in argv.groups if not any(g is c for c in chosen)]
        argv.groups.append(Group("--config", [f"/mm-config-{n}/vllm.yaml"]))
        cm = f"mm-config-{n}"
        objs.append(_config_map(objs[index], cm, {"vllm.yaml": yaml.safe_dump(body)}))
        spec["volumes"] = [*(spec.get("volumes") or []), {"name": cm, "configMap": {"name": cm}}]
        container["volumeMounts"] = [
            *(container.get("volumeMounts") or []),
            {"name": cm, "mountPath": f"/mm-config-{n}"},
        ]
        write_argv(container, argv)
        done = True
    return name if done else None


# The oracle's idioms that run the command {C} unchanged: not those that spell their own
# command ({F}), change the environment or the working directory.
_WRAP_IDIOMS = [
    i for i in IDIOMS if "{C}" in i or "{Q}" in i if "{F}" not in i and "export" not in i
]
_WRAP_LAUNCHERS = [launcher for launcher in LAUNCHERS if not launcher.startswith("env ")]


def _quote(word: str, style: str) -> str:
    """One word for a shell script, quoted in one of the styles people write."""
    if style == "bare" and word and all(c.isalnum() or c in "-_./=:,+@%" for c in word):
        return word
    if style == "double" and "$(" not in word:  # the kubelet expands $(VAR) first
        return '"' + "".join("\\" + c if c in '"$`\\' else c for c in word) + '"'
    return shlex.quote(word)


@transform("shell-wrap")
def shell_wrap(objs: Objects, index: int, name: str, rng: random.Random) -> str | None:
    """The command line run by a shell, in one of the oracle's idioms and launchers."""
    done = False
    for _, container in targets(objs[index], name):
        command, args = _words(container.get("command")), _words(container.get("args"))
        if not command or args is None:
            continue
        style = rng.choice(("single", "double", "bare"))
        glue = rng.choice((" ", " ", " \\\n  "))
        text = glue.join(_quote(w, style) for w in command + args)
        usable = [
            i
            for i in _WRAP_IDIOMS
            if not ("sh -c '" in i and "'" in text)
            and not ("{Q}" in i and any(ch in text for ch in '"$`\\'))
            and not ("cd " in i and "--config" in text)
        ]
        idiom = rng.choice(usable)
        launcher = rng.choice(_WRAP_LAUNCHERS)
        script = idiom.format(L=launcher, C=text, Q=text, F="")
        container["command"] = [rng.choice(("bash", "sh", "/bin/sh")), "-c", script]
        container.pop("args", None)
        done = True
    return name if done else None


@transform("shell-env")
def shell_env(objs: Objects, index: int, name: str, rng: random.Random) -> str | None:
    """The command run by `sh -c` with one flag's value read from `"$VAR"`, VAR from a
    ConfigMap in the set or a literal in the container's env."""
    added: list[dict[str, Any]] = []
    done = False
    for _, container in targets(objs[index], name):
        argv = read_argv(container)
        if argv is None or not argv.has_command:
            continue
        movable = [g for g in argv.groups if g.flag and len(g.values) == 1 and _plain(g.values[0])]
        if not movable:
            continue
        group = rng.choice(movable)
        var = f"MM_SHELL_{len(objs) + len(added)}"
        value = group.values[0]
        group.values, group.eq = ["\x01"], False
        words = [shlex.quote(w) if w != "\x01" else f'"${var}"' for w in argv.tokens()]
        if rng.random() < 0.5:
            cm = var.lower().replace("_", "-")
            added.append(_config_map(objs[index], cm, {var: value}))
            entry: dict[str, Any] = {
                "name": var,
                "valueFrom": {"configMapKeyRef": {"name": cm, "key": var}},
            }
        else:
            entry = {"name": var, "value": value}
        container["env"] = [*(container.get("env") or []), entry]
        container["command"] = ["sh", "-c", "exec " + " ".join(words)]
        container.pop("args", None)
        done = True
    objs.extend(added)
    return name if done else None


@transform("program-path")
def program_path(objs: Objects, index: int, name: str, rng: random.Random) -> str | None:
    """`vllm` and `python3` by their absolute paths in the image."""
    paths = {
        "vllm": ("/usr/local/bin/vllm", "/opt/venv/bin/vllm"),
        "python3": ("/usr/bin/python3", "/usr/local/bin/python3", "/opt/venv/bin/python3"),
        "python": ("/usr/bin/python", "/usr/local/bin/python"),
    }
    done = False
    for _, container in targets(objs[index], name):
        command = _words(container.get("command"))
        if not command or command[0] not in paths:
            continue
        container["command"] = [rng.choice(paths[command[0]]), *command[1:]]
        done = True
    return name if done else None


@transform("resources-spelling")
def resources_spelling(objs: Objects, index: int, name: str, rng: random.Random) -> str | None:
    """Device quantities as int or string, and requests equal to limits added (the API
    server requires them equal for extended resources, and defaults them so)."""
    done = False
    for _, container in targets(objs[index], name):
        resources = container.get("resources")
        limits = resources.get("limits") if isinstance(resources, dict) else None
        if not isinstance(limits, dict):
            continue
        for key, value in list(limits.items()):
            if "/" not in key or str(value).strip() not in {str(n) for n in range(0, 65)}:
                continue
            number = int(str(value).strip())
            limits[key] = str(number) if isinstance(value, int) else number
            if rng.random() < 0.5:
                requests = resources.setdefault("requests", {}) or {}
                resources["requests"] = requests
                if key not in requests:
                    requests[key] = rng.choice((number, str(number)))
            done = True
    return name if done else None


@transform("sidecars")
def sidecars(objs: Objects, index: int, name: str, rng: random.Random) -> str | None:
    """An unrelated sidecar, init container and native sidecar (no devices, no ports).
    Core kinds get the sidecar anywhere; a CRD's list only at its end (order may mean
    something to its controller)."""
    core = objs[index].get("kind") in CORE_KINDS
    done = False
    for spec, _ in list(targets(objs[index], name)):
        tag = len(spec.get("initContainers") or []) + len(spec["containers"])
        side = {"name": f"mm-sidecar-{tag}", "image": "busybox:1.36", "command": ["sleep", "inf"]}
        at = rng.randint(0, len(spec["containers"])) if core else len(spec["containers"])
        spec["containers"] = [*spec["containers"][:at], side, *spec["containers"][at:]]
        init = list(spec.get("initContainers") or [])
        init.append({"name": f"mm-init-{tag}", "image": "busybox:1.36", "command": ["true"]})
        if rng.random() < 0.5:
            init.append(
                {
                    "name": f"mm-native-sidecar-{tag}",
                    "image": "busybox:1.36",
                    "command": ["sleep", "inf"],
                    "restartPolicy": "Always",
                }
            )
        spec["initContainers"] = init
        done = True
    return name if done else None


@transform("rename")
def rename(objs: Objects, index: int, name: str, rng: random.Random) -> str | None:
    """The container renamed (core kinds only: a CRD's controller may find it by name)."""
    if objs[index].get("kind") not in CORE_KINDS:
        return None
    new = rng.choice(("server", "main", "mm-renamed", "app"))
    found = False
    for spec, container in list(targets(objs[index], name)):
        if any(c.get("name") == new for c in spec["containers"] if isinstance(c, dict)):
            return None
        container["name"] = new
        found = True
    return new if found else None


_SPEC_ONLY = {
    "Deployment": ("strategy", "progressDeadlineSeconds", "paused"),
    "StatefulSet": (
        "serviceName",
        "podManagementPolicy",
        "updateStrategy",
        "persistentVolumeClaimRetentionPolicy",
        "ordinals",
    ),
}


@transform("kind")
def kind(objs: Objects, index: int, name: str, rng: random.Random) -> str | None:
    """Deployment <-> StatefulSet <-> Pod (the same pod spec, one controller or none)."""
    obj = objs[index]
    old = obj.get("kind")
    if old not in ("Deployment", "StatefulSet", "Pod") or not isinstance(obj.get("spec"), dict):
        return None
    meta = copy.deepcopy(obj.get("metadata") or {})
    if old == "Pod":
        spec = obj["spec"]
        if spec.get("restartPolicy", "Always") != "Always":
            return None
        labels = dict(meta.get("labels") or {}) or {"mm-app": str(meta.get("name"))}
        template = {"metadata": {"labels": labels}, "spec": spec}
        body: dict[str, Any] = {"replicas": 1, "selector": {"matchLabels": labels}}
    else:
        body = {k: v for k, v in obj["spec"].items() if k not in _SPEC_ONLY.get(old, ())}
        template = body.pop("template", None)
        if not isinstance(template, dict) or body.get("volumeClaimTemplates"):
            return None
    new = rng.choice([k for k in ("Deployment", "StatefulSet", "Pod") if k != old])
    obj.clear()
    if new == "Pod":
        tmeta = template.get("metadata") or {}
        meta["labels"] = tmeta.get("labels") or meta.get("labels")
        if tmeta.get("annotations"):
            meta["annotations"] = {**(meta.get("annotations") or {}), **tmeta["annotations"]}
        obj.update({"apiVersion": "v1", "kind": "Pod", "metadata": meta})
        obj["spec"] = template.get("spec")
    else:
        body.pop("volumeClaimTemplates", None)
        body["template"] = template
        if new == "StatefulSet":
            body["serviceName"] = str(meta.get("name"))
        obj.update({"apiVersion": "apps/v1", "kind": new, "metadata": meta, "spec": body})
    return name


@transform("unrelated-objects")
def unrelated_objects(objs: Objects, index: int, name: str, rng: random.Random) -> str | None:
    """A ConfigMap, a Service selecting other pods, a Namespace and a Deployment that runs
    no vLLM, appended (so no object index moves)."""
    ns = _namespace(objs[index])
    tag = f"mm-unrelated-{len(objs)}"
    meta: dict[str, Any] = {"name": tag}
    if ns is not None:
        meta["namespace"] = ns
    extra = [
        _config_map(objs[index], tag, {"a": "1"}),
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta,
            "spec": {"selector": {"mm-app": tag}, "ports": [{"port": 80}]},
        },
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": tag}},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta,
            "spec": {
                "selector": {"matchLabels": {"mm-app": tag}},
                "template": {
                    "metadata": {"labels": {"mm-app": tag}},
                    "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
                },
            },
        },
    ]
    rng.shuffle(extra)
    objs.extend(extra[: rng.randint(1, len(extra))])
    return name


CASES = corpus_cases()


# -- the relation ----------------------------------------------------------------------------


def violates(before: str, after: str | None) -> bool:
    """pass/warn -> fail is a false denial; fail -> pass a bypass; a recognised container
    with no result at all (after None) is silence, a bypass too."""
    if after is None:
        return True
    return (before != FAIL and after == FAIL) or (before == FAIL and after == PASS)


def unexplained(before: str, result: ContainerResult | None) -> bool:
    """Judged before, unjudged after, and nothing says why."""
    if result is None or before == UNJUDGED or result.verdict != UNJUDGED:
        return False
    return not (result.unjudged and any(f.field and f.message for f in result.findings))


def apply(case: Case, names: list[str], seed: int) -> tuple[Objects, str, list[str]] | None:
    objs: Objects = copy.deepcopy(list(case.objects))
    container = case.container
    applied = []
    for step, name in enumerate(names):
        got = TRANSFORMS[name](objs, case.index, container, random.Random(seed * 31 + step))
        if got is not None:
            container = got
            applied.append(name)
    if not applied:
        return None
    return objs, container, applied


def verdict_after(case: Case, objs: Objects, container: str) -> str | None:
    result = result_after(case, objs, container)
    return result.verdict if result is not None else None


def result_after(case: Case, objs: Objects, container: str) -> ContainerResult | None:
    role = case.label.rsplit("/", 1)[0] + "/" if "/" in case.label else ""
    return _by_container(objs).get((case.index, role + container))


def _findings(objs: Objects, index: int) -> list[str]:
    return [
        f"{r.container}: {f.severity} {f.id}: {f.message}"
        for r in check_objects(objs)
        if r.object_index == index
        for f in r.findings
    ]


# Violations found and not fixed here: (source, label, transformation) -> the bug.
KNOWN: dict[tuple[str, str, str], str] = {}


def _check(case: Case, names: list[str], seed: int) -> None:
    done = apply(case, names, seed)
    if done is None:
        return
    objs, container, applied = done
    result = result_after(case, objs, container)
    after = result.verdict if result is not None else None
    if violates(case.verdict, after) or unexplained(case.verdict, result):
        for name in applied:
            bug = KNOWN.get((case.source, case.label, name))
            if bug:
                pytest.xfail(bug)
        raise AssertionError(
            f"{case}: {case.verdict} -> {after or 'not judged'} after {applied} "
            f"(seed {seed}): {_findings(objs, case.index)}"
        )


_settings = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=SEED is None,
    print_blob=True,
    suppress_health_check=list(HealthCheck),
    database=None,
)


def _maybe_seed(fn: Callable[..., None]) -> Callable[..., None]:
    return hseed(int(SEED))(fn) if SEED is not None else fn


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_each_transformation_keeps_the_verdict(case: Case, name: str) -> None:
    """Every transformation once on every workload (its parameters from a fixed seed)."""
    _check(case, [name], 20261201)


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
@_maybe_seed
@_settings
@given(
    names=st.lists(st.sampled_from(sorted(TRANSFORMS)), min_size=2, max_size=3),
    seed=st.integers(0, 2**31 - 1),
)
def test_combined_transformations_keep_the_verdict(case: Case, names: list[str], seed: int) -> None:
    """Two or three transformations in a row, drawn by Hypothesis."""
    _check(case, names, seed)


def test_every_transformation_applies_somewhere() -> None:
    """A transformation that never applies tests nothing."""
    for name, fn in TRANSFORMS.items():
        hits = sum(
            fn(copy.deepcopy(list(c.objects)), c.index, c.container, random.Random(0)) is not None
            for c in CASES
        )
        assert hits >= 3, (name, hits)


def test_the_corpus_has_every_verdict() -> None:
    verdicts = {c.verdict for c in CASES}
    assert verdicts == {"pass", "warn", "fail", "unjudged"}, verdicts
    assert len(CASES) >= 50


def test_a_rewrite_that_changes_the_command_is_caught() -> None:
    """The relation can fail: a rewrite that doubles TP (not a metamorphic one) turns the
    good sample's pass into a fail, and one that gives the short twin its GPU back turns
    its fail into a pass."""
    good = next(c for c in CASES if c.source == "manifests/good-tp2-deployment.yaml")
    objs: Objects = copy.deepcopy(list(good.objects))
    for _, container in targets(objs[good.index], good.container):
        argv = read_argv(container)
        assert argv is not None
        for g in argv.groups:
            if g.flag and g.key == "--tensor-parallel-size":
                g.values = ["4"]
        write_argv(container, argv)
    assert violates(good.verdict, verdict_after(good, objs, good.container))
    short = next(c for c in CASES if c.source == good.source + " (one GPU short)")
    objs = copy.deepcopy(list(short.objects))
    for _, container in targets(objs[short.index], short.container):
        container["resources"]["limits"]["nvidia.com/gpu"] = 2
    assert violates(short.verdict, verdict_after(short, objs, short.container))


def test_silence_is_caught() -> None:
    """The silence relation can fail: a rewrite after which the container has no result
    is a violation whatever the verdict before, and one after which the container is
    unjudged passes only with a finding that says why."""
    good = next(c for c in CASES if c.source == "manifests/good-tp2-deployment.yaml")
    assert violates(good.verdict, None)
    assert violates("warn", None)
    objs: Objects = copy.deepcopy(list(good.objects))
    for _, container in targets(objs[good.index], good.container):
        # vLLM's gRPC front end: recognised, not a command line the reader reads
        container["command"] = ["python3", "-m", "vllm.entrypoints.grpc_server"]
    result = result_after(good, objs, good.container)
    assert result is not None
    assert result.verdict == UNJUDGED
    assert not unexplained(good.verdict, result)
    bare = dataclasses.replace(result, findings=())
    assert unexplained(good.verdict, bare)
