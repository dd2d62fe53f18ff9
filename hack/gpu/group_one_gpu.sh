#!/usr/bin/env bash
# Issue 14 on one real GPU, one call: the group phase of the real checker (the zipapp,
# python3 with torch) on the GPU machine.
#   1. a one-pod group: the leader alone, fast and deep tier (NCCL all-reduce, 1 rank);
#   2. a group of three: the leader is the real checker on the real GPU, the two workers
#      are the checker over the fake driver (dev/preflight_dev/fakedriver, no GPU: "workers on the
#      CPU"), each told it runs on its own node; they meet on 127.0.0.1 and exchange their
#      facts (the leader's are the real driver's, NVML's UUIDs, the image's NCCL, torch);
#      deep tier forced to gloo so the workers' ranks run on the CPU.
# Results under $OUT (reports as JSON, the text output).
#   bash hack/gpu/group_one_gpu.sh            (repo root; needs dist/vllm-preflight.pyz)
set -u
OUT=${OUT:-/tmp/preflight-gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
PY=${PY:-python3}
ZIP=${ZIP:-dist/vllm-preflight.pyz}
REPO=$PWD
PORT=${PORT:-29600}
{ date -u +%FT%TZ; nvidia-smi -L; "$PY" -c 'import torch; print("torch", torch.__version__, torch.cuda.device_count())'; } 2>&1 | tee "$OUT/host.txt"

group() {  # index size: the group env of member <index>
  echo "PREFLIGHT_GROUP_ADDRESS=127.0.0.1 PREFLIGHT_GROUP_BIND=127.0.0.1 PREFLIGHT_GROUP_PORT=$PORT PREFLIGHT_GROUP_ID=gpu-run PREFLIGHT_GROUP_SIZE=$2 PREFLIGHT_GROUP_INDEX=$1 PREFLIGHT_NODE_NAME=node-$1"
}
FAKE_WORKER="import sys, os; sys.path[:0] = ['$REPO/dev', '$REPO/initcontainer']
from preflight_dev.fakedriver.fake import h200_machine
from preflight_dev.fakedriver.harness import fake_host
from preflight_check.cli import main
sys.exit(main(sys.argv[1:], host=fake_host(h200_machine(2), dict(os.environ))))"

echo "== 1. one-pod group, fast tier"
env $(group 0 1) timeout 60 "$PY" "$ZIP" --tp 1 --deadline 30 --json "$OUT/solo-fast.json" >"$OUT/solo-fast.txt" 2>&1
echo "exit $?"; grep -E "group|verdict" "$OUT/solo-fast.txt"
echo "== 1. one-pod group, deep tier"
env $(group 0 1) timeout 120 "$PY" "$ZIP" --tp 1 --deep --deadline 90 --json "$OUT/solo-deep.json" >"$OUT/solo-deep.txt" 2>&1
echo "exit $?"; grep -E "group|deep|verdict" "$OUT/solo-deep.txt"

echo "== 2. leader on the GPU, two workers on the CPU (fake driver), deep tier over gloo"
# the engine arguments the members compare: the rules' reading (PREFLIGHT_VLLM_ARGS), one
# pipeline stage per pod
args() { echo "vllm serve m -tp 1 -pp 3 --nnodes 3 --node-rank $1"; }
for i in 1 2; do
  env $(group $i 3) PREFLIGHT_VLLM_ARGS="$(args $i)" PREFLIGHT_TIER=deep PREFLIGHT_DEADLINE=90 \
    timeout 120 "$PY" -c "$FAKE_WORKER" --tp 2 --json "$OUT/worker-$i.json" >"$OUT/worker-$i.txt" 2>&1 &
done
env $(group 0 3) PREFLIGHT_VLLM_ARGS="$(args 0)" PREFLIGHT_GROUP_BACKEND=gloo \
  timeout 120 "$PY" "$ZIP" --tp 1 --deep --deadline 90 --json "$OUT/leader.json" >"$OUT/leader.txt" 2>&1
echo "leader exit $?"
wait
grep -E "group" "$OUT/leader.txt" "$OUT/worker-1.txt" "$OUT/worker-2.txt"
"$PY" - "$OUT" <<'EOF'
import json, sys
out = sys.argv[1]
for name in ("solo-fast", "solo-deep", "leader", "worker-1", "worker-2"):
    try:
        report = json.load(open(f"{out}/{name}.json"))
    except Exception as exc:
        print(name, "no report:", exc)
        continue
    for check in report["checks"]:
        if check["id"].startswith("group"):
            ev = check.get("evidence", {})
            keep = {k: ev[k] for k in ("joined", "missing", "slowest", "phase_ms", "backend",
                    "world", "bus_bandwidth_gbps", "seconds_per_op", "ranks_here") if k in ev}
            print(f"{name:9} {check['id']:16} {check['status']:5} {check['message'][:220]}")
            print(f"{'':9} {keep}")
    if name == "leader":
        group = next((c for c in report["checks"] if c["id"] == "group"), {})
        for m in group.get("evidence", {}).get("members", []):
            print(f"{'':9} member {m}")
    print(f"{'':9} group summary {report.get('group')}")
EOF
