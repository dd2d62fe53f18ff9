#!/usr/bin/env python3
"""Generate initcontainer/preflight_contract/vllm_versions.py: which vLLM release accepts
which command-line option and reads which environment variable, from the releases' own
source (PyPI sdists pinned in hack/vllm/sources.json, fetched by fetch_source.py), read
as text with ``ast``; vLLM is never imported.

    python3 hack/vllm/fetch_source.py 0.6.3      # for each pinned version (or prepare_tests)
    python3 hack/vllm/gen_versions.py             # rewrite the table
    python3 hack/vllm/gen_versions.py --check     # exit 1 when the table differs

How each era registers its options (read from the sources, not assumed):

* 0.4-0.9: explicit ``parser.add_argument('--name', '-alias', action=..., ...)`` calls in
  ``vllm/engine/arg_utils.py`` (EngineArgs / AsyncEngineArgs.add_cli_args) and
  ``vllm/entrypoints/openai/cli_args.py`` (make_arg_parser); ``vllm serve`` adds its own
  in ``vllm/scripts.py`` / ``vllm/entrypoints/cli/serve.py``.
* 0.8 onwards: the engine's calls name the flag but take their kwargs from
  ``get_kwargs(SomeConfig)["field"]``; a ``bool`` field becomes
  ``argparse.BooleanOptionalAction`` (``--x`` and ``--no-x``, no value) where that
  version's arg_utils.py says so, ``bool | str | None`` an optional value.
* 0.10 onwards: the frontend's options are every field of the ``FrontendArgs`` dataclass
  (and its bases), added in a loop as ``--{field.replace('_', '-')}``
  (``vllm/entrypoints/openai/cli_args.py``, 0.29-0.32 ``vllm/entrypoints/launchers/cli_args.py``,
  then ``vllm/entrypoints/common/cli_args.py``).

What is recorded per option string: the releases (of those generated) that accept it,
as ranges ``(first, last)``, for the ``python -m vllm.entrypoints.openai.api_server``
parser; ``SERVE_ONLY`` lists what only ``vllm serve`` adds; ``NO_VALUE`` the options that
take no value. ``ENV``: the keys of ``environment_variables`` in ``vllm/envs.py``.
``MARKERS``: behaviours found by a text in the source (``VLLM_PORT`` refusing a URI).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OUT = ROOT / "initcontainer" / "preflight_contract" / "vllm_versions.py"
sys.path.insert(0, str(HERE))

from fetch_source import SOURCES, source_dir  # noqa: E402

# the files whose add_argument calls make the OpenAI server's parser
API_FILES = (
    "vllm/engine/arg_utils.py",
    "vllm/entrypoints/openai/cli_args.py",
    "vllm/entrypoints/launchers/cli_args.py",
    "vllm/entrypoints/common/cli_args.py",
)
# what `vllm serve` adds on top (the CLI's serve subcommand)
SERVE_FILES = ("vllm/entrypoints/cli/serve.py", "vllm/scripts.py")
# functions in SERVE_FILES that build the serve parser (vllm/scripts.py has others)
_SERVE_FUNCS = re.compile(r"serve|subparser_init|main")
_NO_VALUE_ACTIONS = {"store_true", "store_false", "store_const", "count", "help", "version"}
MARKERS = {
    # vllm/envs.py get_vllm_port: "VLLM_PORT 'tcp://...' appears to be a URI"
    "VLLM_PORT refuses a URI": ("vllm/envs.py", "appears to be a URI"),
    # model_loader/utils.py resolve_transformers_fallback (0.7.3 on): an architecture vLLM
    # does not register goes to its Transformers backend ("... has no vLLM implementation,
    # falling back to Transformers implementation"); before, it fails at once with
    # "Model architectures [...] are not supported for now"
    "Transformers backend fallback": (
        "vllm/model_executor/model_loader/utils.py",
        "has no vLLM implementation",
    ),
    # vllm/utils.py FlexibleArgumentParser (0.5.1 on), which the server's parser is built
    # with: "--max_model_len" is read as "--max-model-len"; before, plain argparse refuses
    # the underscore spelling ("unrecognized arguments"; the oracle, tests/data/vllm_oracle)
    # FlexibleArgumentParser turns `-O 3`, `-O3`, `-O=3` into `--optimization-level 3`
    # (0.12.0 on, when `-O` stopped being an option of its own; the oracle, 0.34.0)
    "-O read as --optimization-level": (
        ("vllm/utils/argparse_utils.py", "vllm/utils/__init__.py", "vllm/utils.py"),
        'processed_args.append("--optimization-level")',
    ),
    "Underscores read as dashes": (
        (
            "vllm/entrypoints/openai/cli_args.py",
            "vllm/entrypoints/launchers/cli_args.py",
            "vllm/entrypoints/common/cli_args.py",
            "vllm/entrypoints/openai/api_server.py",
        ),
        "FlexibleArgumentParser",
    ),
}
# where a release registers its model architectures (0.6.3 on: registry.py)
REGISTRY_FILES = (
    "vllm/model_executor/models/registry.py",
    "vllm/model_executor/models/__init__.py",
)
# the dict that merges every registered architecture: _VLLM_MODELS (0.6.3 on), _MODELS before
REGISTRY_DICTS = ("_VLLM_MODELS", "_MODELS")


def version_key(version: str) -> tuple[int, ...]:
    parts = re.findall(r"\d+", version.replace(".post", ".0."))
    return tuple(int(p) for p in parts)


def pinned() -> list[str]:
    pins = json.loads(SOURCES.read_text())
    return sorted((v for v in pins if not v.startswith("_")), key=version_key)


def uploaded(releases: list[str]) -> tuple[str, ...]:
    """Each release's first upload day, as pinned (fetch_source.py --pin-upload-dates)."""
    pins = json.loads(SOURCES.read_text())
    missing = [v for v in releases if "uploaded" not in pins[v]]
    if missing:
        raise SystemExit(
            f"gen_versions: no upload day pinned for {', '.join(missing)}: "
            "python3 hack/vllm/fetch_source.py --pin-upload-dates"
        )
    return tuple(pins[v]["uploaded"] for v in releases)


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError):
        return None


class _Classes:
    """Dataclass fields (with their annotation text) of the classes a release defines,
    found by name anywhere under vllm/ (config classes moved between files)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cache: dict[str, list[tuple[str, str]] | None] = {}
        self.files = [p for p in root.joinpath("vllm").rglob("*.py") if "benchmark" not in p.parts]

    def fields(self, name: str, depth: int = 0) -> list[tuple[str, str]] | None:
        if name in self.cache:
            return self.cache[name]
        self.cache[name] = None
        needle = f"class {name}"
        for path in self.files:
            text = path.read_text(encoding="utf-8", errors="replace")
            if needle not in text:
                continue
            tree = _parse(path)
            if tree is None:
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.name == name:
                    out: list[tuple[str, str]] = []
                    for base in node.bases:
                        if isinstance(base, ast.Name) and depth < 5:
                            out.extend(self.fields(base.id, depth + 1) or [])
                    for stmt in node.body:
                        if (
                            isinstance(stmt, ast.AnnAssign)
                            and isinstance(stmt.target, ast.Name)
                            and not ast.unparse(stmt.annotation).startswith("ClassVar")
                            and not stmt.target.id.startswith("_")
                        ):
                            out.append((stmt.target.id, ast.unparse(stmt.annotation)))
                    self.cache[name] = out
                    return out
        return None


def _bool_kind(annotation: str, boolean_action: bool) -> str | None:
    """How get_kwargs registers a field of this annotation: 'bool' (BooleanOptionalAction),
    'optional' (nargs='?'), or None (takes a value)."""
    words = set(re.findall(r"[A-Za-z_]+", annotation))
    if "bool" not in words:
        return None
    if "str" in words and ("None" in words or "Optional" in words):
        return "optional"
    return "bool" if boolean_action else "flag"


def _calls(tree: ast.AST, funcs: re.Pattern[str] | None) -> Iterator[tuple[ast.Call, dict]]:
    """add_argument calls, with the function's `x = get_kwargs(Cls)` bindings."""
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if funcs is not None and not funcs.search(func.name):
            continue
        binds: dict[str, str] = {}
        for node in ast.walk(func):
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name)
                and node.value.func.id == "get_kwargs"
                and node.value.args
            ):
                arg = node.value.args[0]
                cls = arg.id if isinstance(arg, ast.Name) else ast.unparse(arg)
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        binds[target.id] = cls
        loops = _loop_options(func)
        for node in ast.walk(func):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"
            ):
                yield node, binds | {"__func__": func.name, "__class__": "", "__loops__": loops}


def _loop_options(func: ast.AST) -> dict[str, list[str]]:
    """Option strings a loop variable takes: ``for arg, type in [("--x", str), ...]:
    group.add_argument(arg, ...)`` (0.11.0's deprecated --guided-decoding-* options, found
    missing by vLLM 0.11.0's own parser, tests/data/vllm_oracle)."""
    out: dict[str, list[str]] = {}
    for node in ast.walk(func):
        if not isinstance(node, ast.For) or not isinstance(node.iter, (ast.List, ast.Tuple)):
            continue
        target = node.target
        var = target.elts[0] if isinstance(target, ast.Tuple) and target.elts else target
        if not isinstance(var, ast.Name):
            continue
        names = []
        for item in node.iter.elts:
            first = item.elts[0] if isinstance(item, ast.Tuple) and item.elts else item
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.append(first.value)
        if names and all(n.startswith("-") for n in names):
            out[var.id] = names
    return out


def _kind_of(call: ast.Call, binds: dict, classes: _Classes, boolean_action: bool) -> str:
    """'value' | 'flag' | 'bool' | 'optional' from an add_argument call's keywords."""
    kind = "value"
    for kw in call.keywords:
        if kw.arg == "action":
            text = ast.unparse(kw.value)
            no_value = isinstance(kw.value, ast.Constant) and kw.value.value in _NO_VALUE_ACTIONS
            if "BooleanOptionalAction" in text:
                kind = "bool"
            elif no_value or "StoreBoolean" in text or "store_true" in text:
                kind = "flag"
        elif kw.arg == "nargs" and isinstance(kw.value, ast.Constant):
            if kw.value.value == "?" and kind == "value":
                kind = "optional"
        elif kw.arg is None and isinstance(_spread(kw.value), ast.Subscript):
            # **model_kwargs["field"] (or **{**model_kwargs["field"], ...}): the field's
            # annotation decides
            kind = _field_kind(_spread(kw.value), binds, classes, boolean_action) or kind
    return kind


def _field_kind(sub: ast.expr, binds: dict, classes: _Classes, boolean_action: bool) -> str | None:
    if not isinstance(sub, ast.Subscript):
        return None
    base, key = sub.value, sub.slice
    if not (
        isinstance(base, ast.Name)
        and base.id in binds
        and isinstance(key, ast.Constant)
        and isinstance(key.value, str)
    ):
        return None
    for field, annotation in classes.fields(binds[base.id]) or []:
        if field == key.value:
            return _bool_kind(annotation, boolean_action)
    return None


def _spread(node: ast.expr) -> ast.expr:
    """``{**x["f"], "default": None}`` -> ``x["f"]`` (0.12's --enable-prefix-caching)."""
    if isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values):
            if key is None:
                return value
    return node


def options_of(root: Path, files: Iterable[str], funcs: re.Pattern[str] | None) -> dict[str, str]:
    """option string -> 'value' | 'flag' | 'bool' | 'optional' for one release."""
    classes = _Classes(root)
    arg_utils = root / "vllm/engine/arg_utils.py"
    boolean_action = arg_utils.is_file() and "BooleanOptionalAction" in arg_utils.read_text()
    # 0.33.0 on: FlexibleArgumentParser registers EnableDisableAction for every
    # BooleanOptionalAction: `--enable-x` is also `--disable-x` and the reverse (the oracle:
    # 0.34.0 accepts --disable-log-requests, from --enable-log-requests)
    enable_disable = any(
        (root / rel).is_file() and "class EnableDisableAction" in (root / rel).read_text()
        for rel in ("vllm/utils/argparse_utils.py", "vllm/utils/__init__.py", "vllm/utils.py")
    )
    # argparse's own -h/--help, on every parser
    found: dict[str, str] = {"-h": "flag", "--help": "flag"} if funcs is None else {}

    def add(names: list[str], kind: str) -> None:
        for name in names:
            found[name] = kind
        if kind == "bool":
            for name in names:
                if name.startswith("--"):
                    found["--no-" + name[2:]] = "flag"
                for prefix, inverse in (("--enable-", "--disable-"), ("--disable-", "--enable-")):
                    if enable_disable and name.startswith(prefix):
                        found.setdefault(inverse + name[len(prefix) :], "flag")

    for rel in files:
        tree = _parse(root / rel)
        if tree is None:
            continue
        for call, binds in _calls(tree, funcs):
            names = [
                a.value
                for a in call.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value[:1] == "-"
            ]
            loops = binds.get("__loops__", {})
            for a in call.args:
                if isinstance(a, ast.Name) and a.id in loops:
                    names += loops[a.id]
            kind = _kind_of(call, binds, classes, boolean_action)
            if names:
                add(names, kind)
                continue
            # the frontend loop: add_argument(f"--{key.replace('_', '-')}", **value) over
            # get_kwargs(cls) (cls: FrontendArgs, or the class the method is on)
            if any(isinstance(a, ast.JoinedStr) for a in call.args):
                cls_name = next((c for k, c in binds.items() if not k.startswith("__")), None)
                if cls_name in (None, "cls"):
                    cls_name = "FrontendArgs"
                for owner in _frontend_classes(tree, cls_name):
                    for field, annotation in classes.fields(owner) or []:
                        add(
                            ["--" + field.replace("_", "-")],
                            _bool_kind(annotation, boolean_action) or "value",
                        )
    return found


def _frontend_classes(tree: ast.AST, name: str) -> list[str]:
    """The class the loop reads, and (when the loop is on a base class through ``cls``)
    the subclasses defined beside it that the server uses (FrontendArgs)."""
    names = [name]
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "FrontendArgs" and name != node.name:
            names.append(node.name)
    return names


def env_of(root: Path) -> set[str]:
    tree = _parse(root / "vllm/envs.py")
    if tree is None:
        return set()
    for node in ast.walk(tree):
        target = None
        if isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        if (
            isinstance(target, ast.Name)
            and target.id == "environment_variables"
            and isinstance(value, ast.Dict)
        ):
            return {
                k.value
                for k in value.keys
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            }
    return set()


def _module_dicts(tree: ast.Module) -> dict[str, ast.Dict]:
    found: dict[str, ast.Dict] = {}
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        value = getattr(node, "value", None)
        for target in targets:
            if isinstance(target, ast.Name) and isinstance(value, ast.Dict):
                found[target.id] = value
    return found


def architectures_of(root: Path) -> set[str]:
    """The architectures a release registers: the string keys of its merged registry dict
    (``_VLLM_MODELS``, before 0.6.3 ``_MODELS``) and of every dict it unpacks (``**``)."""
    for rel in REGISTRY_FILES:
        tree = _parse(root / rel)
        if tree is None:
            continue
        dicts = _module_dicts(tree)
        merged = next((dicts[n] for n in REGISTRY_DICTS if n in dicts), None)
        if merged is None:
            continue
        out: set[str] = set()
        pending, seen = [merged], set()
        while pending:
            node = pending.pop()
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    out.add(key.value)
                elif key is None and isinstance(value, ast.Name) and value.id not in seen:
                    seen.add(value.id)
                    if value.id in dicts:
                        pending.append(dicts[value.id])
        return out
    return set()


def markers_of(root: Path) -> set[str]:
    out = set()
    for name, (where, needle) in MARKERS.items():
        for rel in (where,) if isinstance(where, str) else where:
            path = root / rel
            if path.is_file() and needle in path.read_text(encoding="utf-8", errors="replace"):
                out.add(name)
    return out


def ranges(present: list[bool], releases: list[str]) -> tuple[tuple[str, str], ...]:
    out = []
    start = None
    for i, here in enumerate([*present, False]):
        if here and start is None:
            start = i
        elif not here and start is not None:
            out.append((releases[start], releases[i - 1]))
            start = None
    return tuple(out)


def release_facts(version: str) -> dict[str, set[str]] | None:
    """One fetched release, as the tables say it (for the drift test of the releases that
    are fetched): OPTIONS, SERVE_ONLY, NO_VALUE, ENV, MARKERS, ARCHITECTURES; None when not
    fetched."""
    root = source_dir(version)
    if not (root / "vllm" / "__init__.py").is_file():
        return None
    api = options_of(root, API_FILES, None)
    serve = options_of(root, SERVE_FILES, _SERVE_FUNCS)
    return {
        "OPTIONS": set(api),
        "SERVE_ONLY": {n for n in serve if n not in api},
        "NO_VALUE": {n for n, k in (api | serve).items() if k in ("flag", "bool")},
        "ENV": env_of(root),
        "MARKERS": markers_of(root),
        "ARCHITECTURES": architectures_of(root),
    }


def collect(releases: list[str]) -> dict[str, dict[str, tuple[tuple[str, str], ...]]]:
    per: list[tuple[dict[str, str], dict[str, str], set[str], set[str]]] = []
    archs: list[set[str]] = []
    for version in releases:
        root = source_dir(version)
        if not (root / "vllm" / "__init__.py").is_file():
            raise SystemExit(
                f"gen_versions: vLLM {version} is not fetched: "
                f"python3 hack/vllm/fetch_source.py {version}"
            )
        api = options_of(root, API_FILES, None)
        serve = options_of(root, SERVE_FILES, _SERVE_FUNCS)
        per.append((api, serve, env_of(root), markers_of(root)))
        archs.append(architectures_of(root))
    tables: dict[str, dict[str, tuple[tuple[str, str], ...]]] = {}
    api_names = sorted({n for a, _, _, _ in per for n in a})
    tables["OPTIONS"] = {n: ranges([n in a for a, _, _, _ in per], releases) for n in api_names}
    serve_names = sorted({n for a, s, _, _ in per for n in s if n not in a})
    tables["SERVE_ONLY"] = {
        n: ranges([n in s and n not in a for a, s, _, _ in per], releases) for n in serve_names
    }
    no_value = sorted(
        {n for a, s, _, _ in per for d in (a, s) for n, k in d.items() if k in ("flag", "bool")}
    )
    tables["NO_VALUE"] = {
        n: ranges(
            [(a | s).get(n) in ("flag", "bool") for a, s, _, _ in per],
            releases,
        )
        for n in no_value
    }
    env_names = sorted({n for _, _, e, _ in per for n in e})
    tables["ENV"] = {n: ranges([n in e for _, _, e, _ in per], releases) for n in env_names}
    tables["MARKERS"] = {n: ranges([n in m for _, _, _, m in per], releases) for n in MARKERS}
    arch_names = sorted({a for found in archs for a in found})
    tables["ARCHITECTURES"] = {a: ranges([a in f for f in archs], releases) for a in arch_names}
    return tables


HEADER = '''"""GENERATED by hack/vllm/gen_versions.py from the sdists pinned in
hack/vllm/sources.json; do not edit. Regenerate: fetch the pinned sources
(hack/vllm/fetch_source.py VERSION) then run hack/vllm/gen_versions.py.

Which vLLM release accepts which option, read from each release's own source. Every
table maps a name to the ranges ``(first, last)`` of RELEASES (the generated releases,
oldest first) in which it holds; a release outside RELEASES is between two of them.
UPLOADED: the day PyPI received each release's first file (its order is RELEASES').

OPTIONS: option strings of ``python -m vllm.entrypoints.openai.api_server`` (and of
``vllm serve``, which has them all). SERVE_ONLY: what only ``vllm serve`` adds.
NO_VALUE: options that take no value. ENV: keys of vllm/envs.py
``environment_variables``. MARKERS: behaviours found by a text in the source.
ARCHITECTURES: the model architectures the release registers (``_VLLM_MODELS``,
before 0.6.3 ``_MODELS``, in vllm/model_executor/models/).
"""

from typing import Dict, Tuple

Ranges = Tuple[Tuple[str, str], ...]
'''


def render(releases: list[str], tables: dict) -> str:
    lines = [
        HEADER,
        f"RELEASES: Tuple[str, ...] = {tuple(releases)!r}",
        "",
        f"UPLOADED: Tuple[str, ...] = {uploaded(releases)!r}",
        "",
    ]
    for name, table in tables.items():
        lines.append(f"{name}: Dict[str, Ranges] = {{")
        for key, value in table.items():
            lines.append(f"    {key!r}: {value!r},")
        lines.append("}")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    releases = pinned()
    text = render(releases, collect(releases))
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        text = subprocess.run(
            [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(OUT), "-"],
            input=text,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    if args.check:
        if not OUT.is_file() or OUT.read_text() != text:
            print(f"{OUT} is stale: run hack/vllm/gen_versions.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT} ({len(releases)} releases)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
