#!/usr/bin/env python3
"""Hand mutations of the core modules a FAIL or a trust decision rests on, each run against
the tests that claim to guard it (issue 37 item 6: "a test must be able to fail").

Each mutant is one textual change a plausible defect would make (a bound removed, a
comparison flipped, a check skipped). The script applies it, runs its tests, restores the
file, and prints one row: KILLED (a test failed) or SURVIVED (every test still passed: a
defect the suite cannot see). Why hand mutations and not mutmut: mutmut's thousands of
operator swaps over these modules take hours on a 2-core machine, and most are equivalent
mutants; these are the defects the modules' docstrings say they prevent.

    .venv/bin/python hack/mutation/mutate.py            # every mutant, a Markdown table
    .venv/bin/python hack/mutation/mutate.py decoding   # those whose id starts with it

Run from the repository root with the test environment (`make venv`). The file is always
restored, also on Ctrl-C. Not part of `make test` (about a minute on a quiet machine).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OP = "operator/preflight_operator/core"
CT = "initcontainer/preflight_contract"
PLAN_TESTS = ("tests/unit/test_vllm_args.py", "tests/unit/test_gpu_count.py")
GANG_TESTS = ("tests/unit/test_gangindex.py", "tests/unit/test_gang_paths.py")
SHELL_TESTS = ("tests/unit/test_shell.py", "tests/unit/test_shell_launchers.py",
               "tests/unit/test_shrun.py")  # fmt: skip


@dataclass(frozen=True)
class Mutant:
    id: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    what: str


M = Mutant
MUTANTS = (
    # -- safejson: the depth and size bounds every decoder leans on
    M("safejson-no-depth-bound", f"{CT}/safejson.py",
      "and depth(raw, max_depth) > max_depth:", "and False:",
      ("tests/unit/test_safejson.py",), "the depth bound removed (RecursionError backstop left)"),
    M("safejson-depth-off-by-one", f"{CT}/safejson.py",
      "and depth(raw, max_depth) > max_depth:", "and depth(raw, max_depth) > max_depth + 1:",
      ("tests/unit/test_safejson.py",), "one level more than the limit accepted"),
    M("safejson-nan-accepted", f"{CT}/safejson.py",
      "json.loads(raw, parse_float=_finite_float, parse_constant=_no_constant)",
      "json.loads(raw, parse_float=_finite_float)",
      ("tests/unit/test_safejson.py",), "NaN/Infinity accepted"),
    # -- decoding: bounded by the object, never by the page
    M("decoding-page-item-not-refused", f"{OP}/decoding.py",
      "            if count > OBJECT_MAX_ITEMS:", "            if count > 10 * OBJECT_MAX_ITEMS:",
      ("tests/unit/test_decoding.py", "tests/unit/test_list_paging.py"),
      "an over-bound list item kept"),
    M("decoding-deep-item-kept", f"{OP}/decoding.py",
      "            if path[2:4] != _MANAGED_FIELDS and path[1] not in refused:",
      "            if False:",
      ("tests/unit/test_decoding.py", "tests/unit/test_list_paging.py"),
      "a list item nested too deep outside managedFields kept"),
    M("decoding-managedfields-kept", f"{OP}/decoding.py",
      "    strip_managed_fields(body)\n    deep = _deep_outside_managed_fields(paths, ())",
      "    deep = _deep_outside_managed_fields(paths, ())",
      ("tests/unit/test_decoding.py",), "managedFields not stripped from a GET body"),
    M("decoding-poisoned-event-delivered", f"{OP}/decoding.py",
      'return (event if event.get("type") == "DELETED" else None), rejection',
      "return event, rejection",
      ("tests/unit/test_decoding.py",), "a poisoned non-DELETE watch event delivered"),
    M("decoding-head-continue-lost", f"{OP}/decoding.py",
      'token.group(1).decode() if token else ""', '""',
      ("tests/unit/test_decoding.py", "tests/unit/test_list_paging.py"),
      "a refused page's continue token dropped (the list would end early)"),
    # -- provenance: the marks only the operator sets
    M("provenance-create-claim-trusted", f"{OP}/provenance.py",
      "if claimed == CONTROLLER and created_by(pod, user_info, trusted) != CONTROLLER:",
      "if False:",
      ("tests/unit/test_provenance.py",), "a pod claiming created-by=controller believed"),
    M("provenance-update-marks-free", f"{OP}/provenance.py",
      "        if changed is not None:", "        if changed is None and False:",
      ("tests/unit/test_provenance.py",), "an UPDATE changing the operator's marks allowed"),
    M("provenance-hash-name-loose", f"{OP}/provenance.py",
      'return bool(pod_hash) and owner_name == f"{workload}-{pod_hash}"',
      'return owner_name.startswith(workload + "-")',
      ("tests/unit/test_provenance.py",), "a ReplicaSet name matched by prefix, not the hash"),
    # -- ownerchain: a chain of uids the API server returns
    M("ownerchain-uid-ignored", f"{OP}/ownerchain.py",
      "return CONFIRMED if link.uid == target.uid else REFUTED", "return CONFIRMED",
      ("tests/unit/test_ownerchain.py",), "the workload's kind and name enough, uid ignored"),
    M("ownerchain-readback-uid-ignored", f"{OP}/ownerchain.py",
      'if not isinstance(meta, Mapping) or meta.get("uid") != link.uid:',
      "if not isinstance(meta, Mapping):",
      ("tests/unit/test_ownerchain.py",), "an object of the same name but another uid followed"),
    M("ownerchain-any-kind-between", f"{OP}/ownerchain.py",
      "return FOLLOW if (link.group, link.kind) in allowed else REFUTED", "return FOLLOW",
      ("tests/unit/test_ownerchain.py",), "any kind may stand between pod and workload"),
    M("ownerchain-not-controller", f"{OP}/ownerchain.py",
      'ref.get("controller") is not True', "False",
      ("tests/unit/test_ownerchain.py",), "a non-controller ownerReference followed"),
    # -- certainty: a FAIL rests only on exact inputs
    M("certainty-inexact-kept", f"{OP}/rules/certainty.py",
      "        if not item.exact and item not in seen:", "        if False:",
      ("tests/unit/test_rules_certainty.py", "tests/unit/test_model_facts_certainty.py"),
      "a FAIL resting on an estimate not downgraded"),
    M("certainty-heuristic-denies", f"{OP}/rules/certainty.py",
      "    if basis.kind == HEURISTIC and policy_action == ENFORCE:", "    if False:",
      ("tests/unit/test_rule_actions.py",), "a heuristic rule denies under Enforce"),
    M("certainty-per-rule-ignored", f"{OP}/rules/certainty.py",
      "        if name == rule_id:\n            return action",
      "        if False:\n            pass",
      ("tests/unit/test_rule_actions.py",), "a policy's per-rule action ignored"),
    # -- the plan: the GPU count the product exists to get right
    M("plan-world-without-pp", f"{CT}/vllm_args/results.py",
      "return self.tp * self.pp * self.pcp", "return self.tp * self.pcp",
      PLAN_TESTS, "PP left out of the world size"),
    M("plan-dp-local-ignored", f"{CT}/vllm_args/results.py",
      "return max(0, self.dp_local * self.world_size // self.nodes_per_replica)",
      "return max(0, self.world_size // self.nodes_per_replica)",
      PLAN_TESTS, "local DP left out of the GPU count"),
    M("plan-nodes-ignored", f"{CT}/vllm_args/results.py",
      "return max(0, self.dp_local * self.world_size // self.nodes_per_replica)",
      "return max(0, self.dp_local * self.world_size)",
      PLAN_TESTS, "a multi-node replica's share not divided"),
    M("plan-checker-own-count", "initcontainer/preflight_check/plan.py",
      '        return self.nodes_per_replica\n',
      '        return self.nodes_per_replica\n\n'
      '    @property\n    def gpus_needed(self) -> int:\n        return self.tp * self.pp\n',
      ("tests/unit/test_one_plan.py",), "the checker computes its own GPU count again"),
    # -- the shell reader: the argv vLLM really receives from a script
    M("shell-single-quote-expands", f"{OP}/rules/shlexer.py",
      'return Part("lit", text[i + 1 : end], True)',
      'return Part("lit", text[i + 1 : end], False)',
      SHELL_TESTS, "text in single quotes expanded (or split) as if unquoted"),
    M("shell-exec-runs-on", f"{OP}/rules/shcommands.py",
      '            self.r.halt = "exit"  # the shell is replaced: nothing after it runs',
      "            pass",
      SHELL_TESTS, "commands after `exec` of another program read as if the shell went on"),
    M("shell-group-nesting-ignored", f"{OP}/rules/shscan.py",
      "        if ch == opener:\n            depth += 1",
      "        if False:\n            depth += 1",
      SHELL_TESTS, "a nested $( ( ) ) ends at its first closer"),
    # -- named gangs in a cluster (issue 39): grouped as observed, never a denial on them
    M("gang-revision-not-bumped", f"{OP}/gangindex.py",
      "                held.revision += 1  # joined or changed",
      "                pass  # joined or changed",
      GANG_TESTS, "a member joining leaves the others' memo keys as they were"),
    M("gang-status-counts", f"{OP}/gangindex.py",
      "            digest = rule_inputs_digest(body)",
      "            digest = repr(body).encode()",
      GANG_TESTS, "a status update counts as a change of the gang"),
    M("gang-observed-denies", f"{OP}/rules/engine.py",
      "    if group is not None and group.observed and finding.id.startswith(GANG_RULE_PREFIX):",
      "    if False:",
      GANG_TESTS, "a group failure on members as last seen denies (a rollout half applied)"),
    M("gang-owned-pod-joins", f"{OP}/rules/namedgangs.py",
      "    if lookup is None or found is None or not namespace or _controlled(obj):",
      "    if lookup is None or found is None or not namespace:",
      GANG_TESTS, "a pod its controller made joins its own controller's gang"),
    M("gang-worker-not-judged", f"{OP}/rules/engine.py",
      "        if template.gang_leader is not None and mine:",
      "        if False:",
      GANG_TESTS, "a worker met alone gets no group finding (only its leader would)"),
    # -- the vLLM release of an unknown image (issue 38)
    M("version-unknown-newest-only", f"{OP}/rules/vllmversion.py",
      "    refusing = [i for i in RECENT if i not in having]",
      "    refusing = [i for i in RECENT[-1:] if i not in having]",
      ("tests/unit/test_vllm_versions.py",),
      "an unknown image judged by the newest release alone, not the year's"),
)  # fmt: skip


def run(mutant: Mutant) -> str:
    path = ROOT / mutant.path
    text = path.read_text()
    if text.count(mutant.old) != 1:
        return f"STALE (the original text occurs {text.count(mutant.old)} times)"
    try:
        path.write_text(text.replace(mutant.old, mutant.new))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            str(ROOT / p) for p in ("operator", "initcontainer", "dev")
        ))  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
             "-p", "no:randomly", *mutant.tests],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
    finally:
        path.write_text(text)
    if done.returncode == 0:
        return "SURVIVED"
    if done.returncode == 1:
        failed = [ln for ln in done.stdout.splitlines() if ln.startswith("FAILED")]
        return "KILLED by " + (failed[0].split()[1].split("::")[-1] if failed else "a test")
    return f"ERROR (pytest exit {done.returncode})"


def main(argv: list[str]) -> int:
    chosen = [m for m in MUTANTS if not argv or any(m.id.startswith(a) for a in argv)]
    print("| mutant | what it breaks | tests | result |")
    print("| --- | --- | --- | --- |")
    survived = 0
    for mutant in chosen:
        result = run(mutant)
        survived += not result.startswith("KILLED")
        tests = ", ".join(Path(t).name for t in mutant.tests)
        print(f"| `{mutant.id}` | {mutant.what} | {tests} | {result} |", flush=True)
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
