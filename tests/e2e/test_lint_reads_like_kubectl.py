"""lint reads a manifest file as kubectl reads it (issue 11 item 6): for each sample,
`kubectl create --dry-run=client -o json -f FILE` (our pinned kubectl, its Go YAML reader)
and lint agree on whether the file can be read and, when it can, on every object in it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from preflight_dev.testing import Cluster, KubectlError
from preflight_operator.cli import lint

sys.path.insert(0, str(Path(__file__).parents[1] / "data" / "hostile"))
import corpus


def config_map(name: str, body: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n{body}"


# plain scalars PyYAML (YAML 1.1) and go-yaml v2 type differently, and some they agree on
SCALARS = (
    *("y", "n", "Y", "yes", "on", "1:30", "1e3", "0755", "08", "0x1F", "0o17", "0b101"),
    *("1_000", ".5", "1.", "+1", "2001-12-14", "~", "12e", "-0", "0.1e-2", "190:20:30.15"),
)
SAMPLES = {
    "trailing-tabs": "apiVersion: v1\t\nkind: ConfigMap\nmetadata:\n  name: tabs\t\n"
    "data:\n  a: b\t\n  c: 'd'\t# note\n",
    "comment-preamble": "# Copyright\n# more\n---\n" + config_map("pre", "  a: b\n"),
    "directive": "%YAML 1.1\n---\n" + config_map("dir", "  a: b\n"),
    "three-documents": config_map("one", "  a: b\n")
    + "---\n"
    + config_map("two", "  a: 'on'\n")
    + "\n---\n",
    "merge-key": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: merge\n"
    "base: &b {a: x, c: y}\ndata:\n  <<: *b\n  a: z\n",
    "few-aliases": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: alias\n"
    "x: &v hello\ndata:\n" + "".join(f"  k{i}: *v\n" for i in range(50)),
    "block-scalars": config_map("block", "  a: |\n    line\t\n    two\n  b: >-\n    folded\n"),
    "scalar-types": config_map(
        "scalars",
        "".join(
            f"  {k}: {v}\n"
            for k, v in zip(
                "abcdefghijklmnopqrstuv",
                SCALARS,
            )
        ),
    ),
    "infinity": config_map("inf", "  a: .inf\n"),
    "alias-bomb": corpus.alias_bomb(),
    "tab-indent": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: t\n",
    "unclosed-flow": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n",
}


def kubectl_objects(k8s: Cluster, path: Path) -> list[dict[str, Any]] | None:
    try:
        out = k8s.kubectl("create", "--dry-run=client", "-o", "json", "-f", str(path)).stdout
    except KubectlError:
        return None
    # one JSON document per object, one after the other
    decoder, objects, at = json.JSONDecoder(), [], 0
    while out[at:].strip():
        doc, end = decoder.raw_decode(out, at + len(out[at:]) - len(out[at:].lstrip()))
        objects.append(doc)
        at = end
    return objects


def lint_objects(path: Path) -> list[dict[str, Any]] | None:
    problems: list[lint.Problem] = []
    sources = list(lint._read_all([str(path)], problems))
    if problems:
        return None
    return [dict(s.obj) for s in sources]


def comparable(obj: dict[str, Any]) -> dict[str, Any]:
    # kubectl keeps only the fields of the type; ours keeps the file as written. JSON
    # writes a whole float (1e3) as 1000, as kubectl prints it.
    data = obj.get("data")
    if isinstance(data, dict):
        data = {
            str(k).lower() if isinstance(k, bool) else k: int(v)
            if isinstance(v, float) and v.is_integer()
            else v
            for k, v in data.items()
        }
    return {"kind": obj.get("kind"), "name": obj["metadata"]["name"], "data": data}


@pytest.mark.parametrize("name", list(SAMPLES))
def test_lint_and_kubectl_agree(k8s: Cluster, tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_text(SAMPLES[name])
    theirs = kubectl_objects(k8s, path)
    ours = lint_objects(path)
    assert (ours is None) == (theirs is None), (name, ours, theirs)
    if ours is not None and theirs is not None:
        assert [comparable(o) for o in ours] == [comparable(o) for o in theirs]
