"""The policy actions: what a failure does, for the webhook and for the check in the pod.

``Enforce`` denies a failing workload at admission and keeps vLLM from starting after a
failed check (exit 1); ``Warn`` admits with warnings and lets vLLM start; ``Audit`` only
records. The PreflightPolicy's ``spec.action`` holds one of them (the CRD's enum is exact,
so the operator's config reader matches exactly); the injector copies it into
``PREFLIGHT_ACTION``, which the checker reads with ``parse_action`` (case and surrounding
blanks ignored, as for every value a person may type on a command line).
"""

from __future__ import annotations

from typing import Optional, Tuple

ENFORCE = "Enforce"
WARN = "Warn"
AUDIT = "Audit"
ACTIONS: Tuple[str, ...] = (ENFORCE, WARN, AUDIT)
DEFAULT = ENFORCE


def parse_action(text: str) -> Optional[str]:
    """The action ``text`` names (``"audit "`` is ``Audit``), or None when it names none."""
    wanted = text.strip().lower()
    for action in ACTIONS:
        if wanted == action.lower():
            return action
    return None
