"""How long a workload's pods take from container start to Ready, measured (pure).

The probe rule (rules/ruleset/probes.py, ``probe-window``) estimates vLLM's start from the
weights' size and a documented bandwidth. Once the workload has run, the kubelet has told
us the real figure: the pod's containers' ``state.running.startedAt`` (the latest of them:
they start together once the init containers are done) to the pod's ``Ready`` condition's
``lastTransitionTime``. The operator already watches the injected pods, so it reads the
figure from their status, keeps the newest ``MAX_SAMPLES`` per workload on the
GPUValidation (``status.runtime.loadTime``: last, p50, max) and hands the summary to the
rule, which then judges the probe window against what was measured, and says so.

Trust. Only the results of pods the workload's controller made count (provenance.py: a
pod anyone else made in the namespace could otherwise claim a one-second start and silence
the warning, or a day-long one). A figure outside ``(0, MAX_LOAD_SECONDS]``, a timestamp
the API's date-time would refuse, a Ready before the start (a sidecar restarted after
Ready) is dropped, never recorded. What is read back from the stored status is checked the
same way: a status someone else edited cannot carry more than ``MAX_SAMPLES`` entries or a
value out of bounds into the rule.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# A start longer than a day is not a start the kubelet waited for: a clock step, a
# corrupt status. Seconds are whole: the kubelet's timestamps are.
MAX_LOAD_SECONDS = 24 * 3600
# Samples kept on the GPUValidation (newest first): enough for a median over the last few
# rollouts, small beside the status' 128 KiB bound (about 100 bytes each).
MAX_SAMPLES = 20

_RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)")
_UID = re.compile(r"[A-Za-z0-9-]{1,64}")
_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")


@dataclasses.dataclass(frozen=True)
class LoadSample:
    """One pod's start: its containers started at ``started_at``, Ready at ``ready_at``."""

    pod: str
    uid: str
    seconds: int
    ready_at: str

    def to_status(self) -> dict[str, Any]:
        return {"pod": self.pod, "uid": self.uid, "seconds": self.seconds, "readyAt": self.ready_at}


@dataclasses.dataclass(frozen=True)
class LoadSummary:
    """A workload's measured starts: the newest, the median and the slowest."""

    last: int
    p50: int
    max: int
    samples: int

    def text(self) -> str:
        return (
            f"measured {self.samples} start(s) of this workload's pods: last {self.last} s, "
            f"median {self.p50} s, slowest {self.max} s"
        )


def _time(value: Any) -> datetime.datetime | None:
    if not isinstance(value, str) or not _RFC3339.fullmatch(value):
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _ready_at(pod: Mapping[str, Any]) -> str:
    status = pod.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for cond in conditions if isinstance(conditions, list) else []:
        ready = isinstance(cond, Mapping) and cond.get("type") == "Ready"
        if ready and cond.get("status") == "True":
            value = cond.get("lastTransitionTime")
            return value if isinstance(value, str) else ""
    return ""


def _started_at(pod: Mapping[str, Any]) -> str:
    """The latest ``state.running.startedAt`` of the pod's containers ("" unless every
    container runs: a pod is Ready only then)."""
    status = pod.get("status")
    statuses = status.get("containerStatuses") if isinstance(status, Mapping) else None
    latest: tuple[datetime.datetime, str] | None = None
    for entry in statuses if isinstance(statuses, list) else []:
        state = entry.get("state") if isinstance(entry, Mapping) else None
        running = state.get("running") if isinstance(state, Mapping) else None
        value = running.get("startedAt") if isinstance(running, Mapping) else None
        when = _time(value)
        if when is None:
            return ""
        if latest is None or when > latest[0]:
            latest = (when, str(value))
    return latest[1] if latest else ""


def load_sample(pod: Mapping[str, Any]) -> LoadSample | None:
    """The pod's start to Ready, or None while it is not Ready or the figure is not sound."""
    ready_text = _ready_at(pod)
    ready, started = _time(ready_text), _time(_started_at(pod))
    if ready is None or started is None:
        return None
    seconds = (ready - started).total_seconds()
    if not 0 < seconds <= MAX_LOAD_SECONDS:
        return None  # Ready before the start (a later restart), or absurd
    meta = pod.get("metadata")
    if not isinstance(meta, Mapping):
        return None
    name, uid = str(meta.get("name", "")), str(meta.get("uid", ""))
    if not _NAME.fullmatch(name) or not _UID.fullmatch(uid):
        return None
    return LoadSample(name, uid, max(1, round(seconds)), ready_text)


def _stored(entry: Any) -> LoadSample | None:
    """A sample read back from a stored status, or None when it is not one we would write."""
    if not isinstance(entry, Mapping):
        return None
    seconds, ready_at = entry.get("seconds"), entry.get("readyAt")
    pod, uid = entry.get("pod"), entry.get("uid")
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int)
        or not 0 < seconds <= MAX_LOAD_SECONDS
        or _time(ready_at) is None
        or not isinstance(pod, str)
        or not _NAME.fullmatch(pod)
        or not isinstance(uid, str)
        or not _UID.fullmatch(uid)
    ):
        return None
    return LoadSample(pod, uid, seconds, str(ready_at))


def merge_samples(previous: Any, new: Iterable[LoadSample]) -> list[LoadSample]:
    """Newest first, one per pod (its latest start), at most MAX_SAMPLES."""
    by_uid: dict[str, LoadSample] = {}
    stored = previous if isinstance(previous, list) else []
    for sample in [s for s in map(_stored, stored[: MAX_SAMPLES * 2]) if s] + list(new):
        before = by_uid.get(sample.uid)
        if before is None or _key(sample) >= _key(before):
            by_uid[sample.uid] = sample
    return sorted(by_uid.values(), key=_key, reverse=True)[:MAX_SAMPLES]


def _key(sample: LoadSample) -> tuple[datetime.datetime, str]:
    when = _time(sample.ready_at)
    return (when or datetime.datetime.min.replace(tzinfo=datetime.timezone.utc), sample.uid)


def summarise(samples: Sequence[LoadSample]) -> LoadSummary | None:
    """last (the newest), p50 (the lower median) and max of the samples; None for none."""
    if not samples:
        return None
    ordered = sorted(s.seconds for s in samples)
    return LoadSummary(
        last=samples[0].seconds,
        p50=ordered[(len(ordered) - 1) // 2],
        max=ordered[-1],
        samples=len(samples),
    )


def load_section(previous_runtime: Mapping[str, Any], new: Iterable[LoadSample]) -> dict[str, Any]:
    """``status.runtime.loadTime`` ({} when nothing was ever measured)."""
    before = previous_runtime.get("loadTime")
    recent = merge_samples(before.get("recent") if isinstance(before, Mapping) else None, new)
    summary = summarise(recent)
    if summary is None:
        return {}
    return {
        "lastSeconds": summary.last,
        "p50Seconds": summary.p50,
        "maxSeconds": summary.max,
        "samples": summary.samples,
        "recent": [s.to_status() for s in recent],
    }


def summary_of_status(status: Any) -> LoadSummary | None:
    """The measured summary on a stored GPUValidation status, recomputed from its samples
    (so a summary field edited by hand cannot steer the rule), or None."""
    runtime = status.get("runtime") if isinstance(status, Mapping) else None
    section = runtime.get("loadTime") if isinstance(runtime, Mapping) else None
    if not isinstance(section, Mapping):
        return None
    return summarise(merge_samples(section.get("recent"), ()))
