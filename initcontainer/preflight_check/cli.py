"""`vllm-preflight check`: parse options, collect facts, evaluate checks, write the report.

Exit codes (report.py): 0 pass or not enforced, 1 failed under Enforce, 2 usage or
internal error. Every path writes a report, including usage errors and crashes of the
checker itself, and none prints a traceback.
"""

from __future__ import annotations

import sys
import time
from typing import List, Mapping, Optional, Sequence, TextIO

from preflight_check.host import Host, real_host
from preflight_check.options import Options, UsageError, output_paths, parse_action, parse_options
from preflight_check.output import write_outputs
from preflight_contract import envnames, redact
from preflight_contract.actions import ENFORCE
from preflight_contract.check_ids import CHECKS
from preflight_contract.report import CheckResult, Report
from preflight_contract.terminal import clean
from preflight_contract.verdicts import ERROR


def _import_checks() -> None:
    """Compile the checks while the rank probes work (a zipapp has no bytecode cache)."""
    import preflight_check.runner  # noqa: F401, PLC0415


def run(options: Options, host: Host, out: TextIO, err: TextIO) -> int:
    # Deferred: --help, --list-checks and usage errors need none of this. The children
    # start before the collectors and checks are even imported (docs/PERFORMANCE.md).
    from preflight_check.launch import launch  # noqa: PLC0415

    started = time.time()
    try:
        launched = launch(options, host)
        from preflight_check.gather import gather  # noqa: PLC0415

        facts = gather(options, host, while_waiting=_import_checks, launched=launched)
        from preflight_check.runner import build_report, evaluate  # noqa: PLC0415

        results = evaluate(facts, options)
        if options.group is not None:
            from preflight_check.checks.group import group_phase, summary  # noqa: PLC0415

            results += group_phase(facts, options, results, started)
        report = build_report(facts, options, results, started)
        if options.group is not None:
            report.group = summary(options.group, results)
    except Exception as exc:  # the checker's own bug: report it, never a traceback
        report = Report(
            action=options.action,
            tier=options.tier,
            plan=options.plan.to_dict(),
            error=f"internal error: {type(exc).__name__}: {exc}",
            duration_ms=(time.time() - started) * 1000.0,
        )
        import traceback  # noqa: PLC0415 - only for the checker's own crash

        report.inventory = {"traceback": traceback.format_exc(limit=6)[-2000:]}
    write_outputs(
        _redacted(report, host.environ),
        options.json_path,
        options.termination_log,
        termination_log_given=options.termination_log_given,
        out=out,
        err=err,
    )
    return report.exit_code()


def usage_failure(
    error: UsageError,
    argv: Sequence[str],
    environ: Mapping[str, str],
    out: TextIO,
    err: TextIO,
) -> int:
    """A malformed input: exit 2 with a report that names it."""
    json_path, termination_log = output_paths(argv)
    try:
        action = parse_action(environ.get(envnames.ACTION, ENFORCE), envnames.ACTION)
    except UsageError:
        action = ENFORCE
    report = Report(
        checks=[
            CheckResult(
                "usage",
                ERROR,
                str(error),
                "see `vllm-preflight check --help`; in Kubernetes, the pod's PREFLIGHT_* env",
            )
        ],
        action=action,
    )
    hidden = _redactor(environ)
    err.write(f"vllm-preflight check: usage error: {clean(hidden.text(error))}\n")
    write_outputs(
        hidden.report(report),
        json_path,
        termination_log,
        termination_log_given=termination_log is not None,
        out=out,
        err=err,
    )
    return report.exit_code()


def _redactor(environ: Mapping[str, str]) -> redact.Redactor:
    """The pod's secrets (PREFLIGHT_SECRET_ENV, names that say so, URL passwords) and the
    pattern rules; the patterns alone should reading the env ever fail."""
    try:
        return redact.for_process(environ, environ.get(envnames.SECRET_ENV, ""))
    except Exception:  # a bug here must not cost the report: the patterns still apply
        return redact.PATTERNS


def _redacted(report: Report, environ: Mapping[str, str]) -> Report:
    """The report as written anywhere (stdout, --json, the termination message, and from
    there the GPUValidation, Events and logs): no secret of the pod in it (issue 36)."""
    return _redactor(environ).report(report)


def main(
    argv: Optional[Sequence[str]] = None,
    host: Optional[Host] = None,
    out: Optional[TextIO] = None,
    err: Optional[TextIO] = None,
) -> int:
    args: List[str] = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["check"]:  # the zipapp accepts the subcommand name too
        args = args[1:]
    stdout = out or sys.stdout
    stderr = err or sys.stderr
    the_host = host or real_host()
    try:
        options = parse_options(args, the_host.environ)
    except UsageError as exc:
        return usage_failure(exc, args, the_host.environ, stdout, stderr)
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except Exception as exc:  # a reader's own bug on odd input: still a report, no traceback
        error = UsageError(f"the options could not be read: {type(exc).__name__}: {exc}"[:2000])
        return usage_failure(error, args, the_host.environ, stdout, stderr)
    if options.list_checks:
        for check_id, (tier, what) in CHECKS.items():
            stdout.write(f"{check_id:<24} {tier:<5} {what}\n")
        return 0
    return run(options, the_host, stdout, stderr)


if __name__ == "__main__":
    sys.exit(main())
