"""The 'settings' check: PREFLIGHT_* values that could not be read.

Under Enforce such a value is a usage error (exit 2, the report says which variable and
where it comes from). Under Warn and Audit it must not block the pod (a PreflightPolicy the
operator let through would otherwise stop every vLLM pod of its namespace): options.py
used the default for it and this check says so, as a warning, with the fix.
"""

from __future__ import annotations

from typing import List

from preflight_check.checks.base import check, result
from preflight_check.facts import Facts
from preflight_check.options import Options, env_fix
from preflight_contract.report import CheckResult
from preflight_contract.verdicts import PASS, WARN


@check("settings")
def settings_check(facts: Facts, options: Options) -> List[CheckResult]:
    problems = options.setting_problems
    if not problems:
        return result("settings", PASS, "every PREFLIGHT_* value given was read")
    names = sorted({name for name, _ in problems})
    return result(
        "settings",
        WARN,
        "ignored (the default was used): " + "; ".join(message for _, message in problems),
        " ".join(env_fix(name) for name in names),
        variables=names,
    )
