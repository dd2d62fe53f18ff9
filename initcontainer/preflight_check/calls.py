"""Records of driver calls, shared by the checker and its rank probe children.

Plain classes rather than dataclasses: the rank probe imports this module, and its
start-up time is on the checker's critical path (see docs/PERFORMANCE.md).
"""

from __future__ import annotations

from preflight_check.driver.basics import cuda_error_name

TYPE_CHECKING = False  # see binding.py: keeps typing out of the rank probe's start-up
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional


class CallRecord:
    """One driver call as observed: by whom, what it returned and how long it took.

    ``finished`` is False for a call that was announced and never returned (the process
    crashed or hung inside it).
    """

    __slots__ = ("call", "code", "finished", "ms", "name", "thread", "value")

    def __init__(
        self,
        call: str,
        thread: str,
        *,
        code: Optional[int] = None,
        name: str = "",
        value: Any = None,
        ms: float = 0.0,
        finished: bool = True,
    ) -> None:
        self.call = call
        self.thread = thread
        self.code = code
        self.name = name
        self.value = value
        self.ms = ms
        self.finished = finished

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"call": self.call, "thread": self.thread}
        if self.finished:
            out["result"] = self.name or cuda_error_name(self.code or 0)
            out["ms"] = round(self.ms, 1)
            if self.value is not None:
                out["value"] = self.value
        else:
            out["result"] = "did not return"
        return out

    def __repr__(self) -> str:
        return f"CallRecord({self.call!r}, {self.thread!r}, {self.code!r}, {self.value!r})"


class BindingOutcome:
    """Binding one GPU: retain its primary context, make it current, use it."""

    __slots__ = ("calls", "detail", "failed_call", "ms", "ok", "ordinal")

    def __init__(
        self,
        ordinal: int,
        ok: bool,
        *,
        calls: Optional[List[CallRecord]] = None,
        failed_call: str = "",
        detail: str = "",
        ms: float = 0.0,
    ) -> None:
        self.ordinal = ordinal
        self.ok = ok
        self.calls = list(calls or [])
        self.failed_call = failed_call
        self.detail = detail
        self.ms = ms

    def result_name(self) -> str:
        for record in self.calls:
            if record.call == self.failed_call:
                return record.name
        return "CUDA_SUCCESS" if self.ok else "not run"

    def __repr__(self) -> str:
        return f"BindingOutcome({self.ordinal}, ok={self.ok}, failed={self.failed_call!r})"
