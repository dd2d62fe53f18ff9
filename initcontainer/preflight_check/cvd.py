"""CUDA_VISIBLE_DEVICES as the driver reads it — used to EXPLAIN the driver's answer.

The verdict always comes from asking the driver (cuInit, cuDeviceGetCount, the UUID of
every ordinal). This parser reproduces the rules measured in docs/GPU_FACTS.md so that the
report can say *why*: "entry 2 'abc' is not a GPU; CUDA ignores it and every entry
after it". Where the measured table is silent the explanation says so instead of
guessing.

Rules (docs/GPU_FACTS.md, and rows measured later in docs/GPU_RUNS.md): entries are comma
separated, spaces around them are tolerated; an entry is an index into CUDA's own
enumeration, read as the leading integer the way strtol does ("+1" and "1abc" are 1,
"0x1" is 0), a full GPU UUID (with or without dashes, hex in
either case, the ``GPU-`` prefix exactly so) or a unique UUID prefix such as
``GPU-ea300b2e``. The first entry that names no GPU ends the list: it and everything
after it are ignored. A GPU named twice the same way before that point fails cuInit
with CUDA_ERROR_INVALID_DEVICE (101); named again in another form (index, then UUID) it
ends the list. A list that names no GPU at all (``""``, ``-1``, ``abc``, ``5``) fails
cuInit with CUDA_ERROR_NO_DEVICE (100).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional, Sequence

from preflight_check.driver.api import (
    CUDA_ERROR_INVALID_DEVICE,
    CUDA_ERROR_NO_DEVICE,
    CUDA_SUCCESS,
    uuid_key,
)

INDEX = "index"
UUID = "uuid"
INVALID = "invalid"
UNRESOLVED = "unresolved"


@dataclass(frozen=True)
class BaseGpu:
    """A GPU CUDA could enumerate without CUDA_VISIBLE_DEVICES, in CUDA's order."""

    uuid: str
    pci_bus_id: str = ""
    name: str = ""

    def label(self, index: int) -> str:
        bus = f", bus {self.pci_bus_id}" if self.pci_bus_id else ""
        return f"GPU {index} ({self.uuid[:12]}{bus})"


@dataclass
class Entry:
    position: int  # 1-based, as a user counts entries
    text: str
    kind: str
    gpu: Optional[int] = None  # index into the base list
    reason: str = ""


@dataclass
class Explanation:
    value: Optional[str]
    entries: List[Entry] = field(default_factory=list)
    predicted_code: int = CUDA_SUCCESS
    predicted_visible: List[int] = field(default_factory=list)
    # The entry that ended the list, and the entries it took with it.
    stopped_at: Optional[Entry] = None
    dropped: List[Entry] = field(default_factory=list)
    duplicate: Optional[Entry] = None
    # True when an entry could not be resolved from what is known (a MIG UUID, or
    # indices with no GPU list): the prediction is then partial.
    uncertain: bool = False

    @property
    def is_set(self) -> bool:
        return self.value is not None

    def lost_gpus(self) -> List[int]:
        """GPUs the user named that CUDA will not show, in the order named."""
        out: List[int] = []
        for entry in self.dropped:
            if (
                entry.gpu is not None
                and entry.gpu not in out
                and entry.gpu not in self.predicted_visible
            ):
                out.append(entry.gpu)
        return out


_LEADING_INTEGER = re.compile(r"[+-]?[0-9]+")


def _classify(position: int, text: str, base: Optional[Sequence[BaseGpu]]) -> Entry:
    number = _LEADING_INTEGER.match(text)
    if number:
        # The driver reads the leading integer, like strtol (measured: "+1" -> 1,
        # "1abc" -> 1, "0x1" -> 0, "1.0" -> 1, "-0" -> 0).
        index = int(number.group())
        rest = text[number.end() :]
        if index < 0:
            return Entry(
                position, text, INVALID, reason="a negative index hides every GPU from there on"
            )
        if base is None:
            return Entry(position, text, UNRESOLVED, reason="GPU list unknown (NVML unavailable)")
        if index >= len(base):
            have = f"this container has {len(base)}: 0-{len(base) - 1}" if base else "none"
            return Entry(position, text, INVALID, reason=f"there is no GPU {index} ({have})")
        note = f"CUDA reads {index} and ignores {rest!r}" if rest else ""
        return Entry(position, text, INDEX, gpu=index, reason=note)
    if text.startswith("MIG-"):
        return Entry(position, text, UNRESOLVED, reason="MIG device UUIDs are not resolved here")
    if text.startswith("GPU-"):
        wanted = uuid_key(text)
        if not wanted:
            return Entry(position, text, INVALID, reason="'GPU-' alone names no GPU")
        if base is None:
            return Entry(position, text, UNRESOLVED, reason="GPU list unknown (NVML unavailable)")
        matches = [i for i, gpu in enumerate(base) if uuid_key(gpu.uuid).startswith(wanted)]
        if len(matches) == 1:
            return Entry(position, text, UUID, gpu=matches[0])
        if not matches:
            return Entry(position, text, INVALID, reason="no GPU's UUID starts with it")
        names = ", ".join(str(i) for i in matches)
        return Entry(
            position,
            text,
            INVALID,
            reason=f"it matches the UUIDs of GPUs {names}; a prefix must name exactly one",
        )
    if text.lstrip("-").isdigit():
        return Entry(
            position, text, INVALID, reason="a negative index hides every GPU from there on"
        )
    if text == "":
        return Entry(position, text, INVALID, reason="an empty entry names no GPU")
    return Entry(position, text, INVALID, reason="it is neither a GPU index nor a GPU UUID")


def explain(value: Optional[str], base: Optional[Sequence[BaseGpu]]) -> Explanation:
    """Predict what CUDA makes of ``value`` over the GPUs in ``base`` (CUDA order)."""
    if value is None:
        visible = list(range(len(base))) if base is not None else []
        return Explanation(value=None, predicted_visible=visible, uncertain=base is None)
    result = Explanation(value=value)
    texts = value.split(",")
    result.entries = [_classify(i + 1, text.strip(), base) for i, text in enumerate(texts)]
    seen: List[int] = []
    kinds: List[str] = []
    for index, entry in enumerate(result.entries):
        if entry.kind == UNRESOLVED:
            result.uncertain = True
            continue
        if entry.gpu is not None and entry.gpu in seen:
            if kinds[seen.index(entry.gpu)] == entry.kind:
                # The same GPU named twice the same way: cuInit fails (measured: 0,0).
                result.duplicate = result.duplicate or entry
            else:
                # By index and by UUID: measured "0,GPU-<uuid of 0>" -> GPU 0 alone,
                # read as ending the list like an invalid entry.
                entry.kind = INVALID
                entry.reason = f"it names GPU {entry.gpu} again, in another form"
        if entry.kind == INVALID:
            result.stopped_at = entry
            result.dropped = result.entries[index + 1 :]
            break
        assert entry.gpu is not None
        seen.append(entry.gpu)
        kinds.append(entry.kind)
    if result.duplicate is not None:
        result.predicted_code = CUDA_ERROR_INVALID_DEVICE
        result.predicted_visible = []
    elif not seen and not result.uncertain:
        result.predicted_code = CUDA_ERROR_NO_DEVICE
        result.predicted_visible = []
    else:
        result.predicted_visible = seen
    return result


def vllm_unparseable(value: Optional[str]) -> List[str]:
    """Entries vLLM cannot turn into a device id: it calls int() on each of them."""
    if value is None:
        return []
    bad: List[str] = []
    for text in value.split(","):
        try:
            int(text)
        except ValueError:
            bad.append(text)
    return bad
