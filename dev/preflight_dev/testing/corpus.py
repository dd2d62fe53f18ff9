"""The real-world corpus's expected verdicts (tests/data/realworld, README there).

`expected.json` holds the verdicts of the first files; each later batch of files keeps its
own `expected-<batch>.json` of the same shape, so that batches gathered in parallel never
edit one file. A file named by two of them is a mistake, not an override: it raises.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REALWORLD = Path(__file__).resolve().parents[3] / "tests" / "data" / "realworld"


def expected_files(root: Path = REALWORLD) -> list[Path]:
    """`expected.json` first, then every `expected-*.json`, sorted."""
    return [root / "expected.json", *sorted(root.glob("expected-*.json"))]


def load_expected(root: Path = REALWORLD) -> dict[str, Any]:
    """Corpus-relative file path -> its expected entry, merged over every expected file."""
    merged: dict[str, Any] = {}
    for path in expected_files(root):
        files = json.loads(path.read_text(encoding="utf-8"))["files"]
        for rel, entry in files.items():
            if rel in merged:
                raise ValueError(f"{path.name}: {rel} already has an expected verdict")
            merged[rel] = entry
    return merged
