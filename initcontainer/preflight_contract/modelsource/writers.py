"""The init containers that write the model's volume after the check (PREFLIGHT_MODEL_
WRITERS): the value the injector sets, its reading, and ``written_later``, which makes a
fail that rests on the volume's files a warning naming them.

Separate: the operator (injection) and the checker each use one side of it.
"""

from __future__ import annotations

import re
from typing import Iterable, List, Sequence, Tuple

from preflight_contract.modelsource.directory_check import READY_FAIL, READY_WARN, Readiness

# -- written after the check (PREFLIGHT_MODEL_WRITERS) -----------------------------------
#
# The injected check runs before every init container of the pod (docs/dev/
# OPERATOR_CONTRACT.md "Injected init containers"). One that mounts the model's volume
# writable (a downloader: `aws s3 sync`, `gsutil rsync`, `huggingface-cli download`, a copy
# from a PVC; a native sidecar too) runs after it and may still add or finish the files:
# what the check sees there is not the copy vLLM will load. The injector names those
# containers (preflight_operator/core/inject_models.py model_writers).

# A container's name: an RFC 1123 label, the API server's rule for every container.
_CONTAINER_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")
# The first names are enough to say who writes: a pod with more is named by its first 8.
MAX_MODEL_WRITERS = 8
# 8 names of at most 63 characters, with their commas (and some spaces)
MAX_MODEL_WRITERS_CHARS = 8 * 64 + 64


def model_writers_value(names: Iterable[object]) -> str:
    """The injector's value: the names that are container names, in order, each once, at
    most MAX_MODEL_WRITERS of them ("" for none)."""
    out: List[str] = []
    for name in names:
        if isinstance(name, str) and _CONTAINER_NAME.match(name) and name not in out:
            out.append(name)
            if len(out) == MAX_MODEL_WRITERS:
                break
    return ",".join(out)


def parse_model_writers(text: str) -> Tuple[List[str], str]:
    """The checker's reading: (the names, "") or ([], why the value was ignored). Only a
    list of container names is taken: the value may come from the pod's own env (as
    PREFLIGHT_SKIP may), and is quoted into the report."""
    if not text.strip():
        return [], ""
    if len(text) > MAX_MODEL_WRITERS_CHARS:
        return [], f"{len(text)} characters, more than {MAX_MODEL_WRITERS_CHARS}"
    names = [name.strip() for name in text.split(",")]
    if len(names) > MAX_MODEL_WRITERS:
        return [], f"{len(names)} names, more than {MAX_MODEL_WRITERS}"
    for name in names:
        if not _CONTAINER_NAME.match(name):
            return [], f"{ascii(name)[:40]} is not a container name"
    return names, ""


def written_later(ready: Readiness, writers: Sequence[str]) -> Readiness:
    """A fail when ``writers`` (init containers of the pod) write the model's volume after
    the check: a warning that names them, with what was seen.

    Every fail ``check_source`` makes rests on what the volume holds now, which a later
    copy changes: a directory's files (no config.json, an index not (yet) readable, no
    weights, a missing or short shard), a cache partial or absent under HF_HUB_OFFLINE,
    and, for a Hub repo id read through a cache on such a volume, the Hub's refusals and
    the room for a download, which a complete cached copy makes moot (check_hub passes a
    complete copy without asking the Hub, as vLLM loads it). So each becomes a warning;
    none is kept as a fail. A pass stays a pass (the copy is complete already)."""
    if ready.status != READY_FAIL or not writers:
        return ready
    names = ", ".join(writers)
    who = (
        f"init container {names} of the pod writes"
        if len(writers) == 1
        else (f"init containers {names} of the pod write")
    )
    return Readiness(
        READY_WARN,
        f"not judged: the {who} the volume the model is read from after this check, so the "
        f"files seen now are not the ones vLLM will load; as they are now: {ready.message}",
        f"nothing to do if {names} finish{'es' if len(writers) == 1 else ''} the copy; if "
        f"vLLM then fails while loading, read {'its' if len(writers) == 1 else 'their'} logs "
        f"({ready.fix})",
        {**ready.evidence, "writers": list(writers), "seen": READY_FAIL},
        ready.ms,
    )
