"""Run the whole checker (CLI included) against a FakeMachine, children and all."""

from __future__ import annotations

import io
import json
import os
import sys
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from preflight_check.cli import main
from preflight_check.facts import PreloadFacts, RuntimeRequirement, ShmFacts
from preflight_check.host import Host
from preflight_contract.report import Report
from preflight_dev.fakedriver.fake import FakeCudaDriver, FakeMachine, FakeNvml

NO_DRIVER = (
    "libcuda.so.1 not found (libcuda.so.1: cannot open shared object file: "
    "No such file or directory)"
)
FAKE_CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_child.py")
GIB = 1 << 30


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    report: Report
    compact: Optional[Dict[str, Any]]

    def check(self, check_id: str) -> Any:
        found = [c for c in self.report.checks if c.id == check_id]
        assert found, f"no result for {check_id}: {[c.id for c in self.report.checks]}"
        return found[0]


def fake_host(
    machine: FakeMachine,
    environ: Optional[Dict[str, str]] = None,
    *,
    shm_size: int = 64 * GIB,
    runtime: Optional[RuntimeRequirement] = None,
    preload: Optional[PreloadFacts] = None,
    deep_plan: Optional[Dict[str, Any]] = None,
    no_driver: bool = False,
    kernel_log: Optional[str] = None,
) -> Host:
    env = dict(environ or {})

    def load_cuda() -> FakeCudaDriver:
        if no_driver:
            from preflight_check.driver.api import DriverUnavailable  # noqa: PLC0415

            raise DriverUnavailable(NO_DRIVER)
        return FakeCudaDriver(machine, env)

    child_env = {"PATH": os.environ.get("PATH", ""), **env}
    child_env["PREFLIGHT_FAKE_MACHINE"] = machine.to_json()
    if no_driver:
        child_env["PREFLIGHT_FAKE_NO_DRIVER"] = "1"
    if deep_plan is not None:
        child_env["PREFLIGHT_FAKE_DEEP"] = json.dumps(deep_plan)
    return Host(
        environ=env,
        load_cuda=load_cuda,
        load_nvml=lambda: FakeNvml(machine),
        command_for=lambda module: [sys.executable, FAKE_CHILD, module],
        shm=lambda: ShmFacts("/dev/shm", True, shm_size, shm_size),
        preload=lambda _env: preload or PreloadFacts(),
        device_nodes=lambda: None,
        runtime=lambda _env: (
            runtime or RuntimeRequirement((13, 0), "torch", "torch 2.11.0+cu130", "2.11.0+cu130")
        ),
        child_environ=child_env,
        # the kernel log is the test machine's own otherwise: None is "not readable"
        kernel_log=lambda: kernel_log,
    )


def run_check(host: Host, argv: List[str], tmp_path: Any) -> Run:
    json_path = os.path.join(str(tmp_path), "report.json")
    term_path = os.path.join(str(tmp_path), "termination-log")
    out, err = io.StringIO(), io.StringIO()
    code = main(
        [*argv, "--json", json_path, "--termination-log", term_path],
        host=host,
        out=out,
        err=err,
    )
    with open(json_path, encoding="utf-8") as handle:
        report = Report.from_json(handle.read())
    compact = None
    if os.path.exists(term_path):
        with open(term_path, encoding="utf-8") as handle:
            compact = json.loads(handle.read())
    return Run(code, out.getvalue(), err.getvalue(), report, compact)
