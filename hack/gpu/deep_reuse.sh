#!/usr/bin/env bash
# Verdict reuse on the real GPU machine (issue 29 item 3; docs/CHECKS.md "Verdict reuse"):
# what a restart saves when it takes the operator's offer of an earlier deep pass.
#   0. the fast tier alone: the floor a reuse can reach (the fast tier always runs);
#   1. the deep tier runs and passes: its report carries `deep_pass_key` (the hardware key
#      of these GPUs and this driver), which the operator would record on the Node;
#   2. the offer the injector would write for that record (PREFLIGHT_DEEP_REUSE, this node
#      in PREFLIGHT_NODE_NAME; sealed: no node, pod or key in it): the deep tier is skipped,
#      `deep-reuse` names the time of the pass;
#   3. the same offer with another hardware key (one GPU swapped, a driver update): refused,
#      the deep tier runs again.
# Each run is timed whole (wall seconds of the process, as a restart pays it), REPS times.
#   bash hack/gpu/deep_reuse.sh        (repo root; needs dist/vllm-preflight.pyz and torch)
set -u
PY=${PY:-python3}
ZIP=${ZIP:-dist/vllm-preflight.pyz}
REPS=${REPS:-3}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
NODE=gpu-node-a

run() {  # run NAME OFFERS [TIER]
  local name=$1 offers=$2 tier=${3:-deep} i t0 t1
  for i in $(seq 1 "$REPS"); do
    t0=$EPOCHREALTIME
    env PREFLIGHT_NODE_NAME="$NODE" PREFLIGHT_DEEP_REUSE="$offers" \
      "$PY" "$ZIP" --tp 1 --tier "$tier" --json "$OUT/$name-$i.json" >/dev/null 2>&1
    local rc=$?
    t1=$EPOCHREALTIME
    echo "$name run $i: exit $rc, $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s"
  done
}

summary() {  # summary NAME
  "$PY" - "$OUT/$1-1.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("  verdict:", r.get("verdict"), "| plan deep_pass_key:", r.get("plan", {}).get("deep_pass_key", "-"),
      "| deep_reused:", r.get("plan", {}).get("deep_reused", "-"))
for c in r.get("checks", []):
    if c.get("id", "").startswith("deep"):
        print(f"  {c.get('id')}: {c.get('status')}: {str(c.get('message'))[:300]}")
PY
}

echo "== 0. the fast tier alone (the floor a reuse can reach)"
run fast "[]" fast
echo "== 1. deep tier, no offer"
run first "[]"
summary first
KEY=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["plan"]["deep_pass_key"])' "$OUT/first-1.json")
NOW=$(date -u +%Y-%m-%dT%H:%M:%SZ)
UNTIL=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
# the sealed offer the injector writes (preflight_contract.reuse.Offer.sealed), made with the
# contract inside the zipapp; the other one is sealed over another hardware key
offer() {  # offer KEY
  PYTHONPATH="$ZIP/src" "$PY" -c 'import sys
from preflight_contract.reuse import Offer, format_offers
print(format_offers([Offer.sealed(*sys.argv[1:])]))' "$NODE" "$1" bench/vllm-0 "$NOW" "$UNTIL"
}
OFFER=$(offer "$KEY")
echo "== 2. the offer of that pass: $OFFER"
run reused "$OFFER"
summary reused
OTHER=$(offer 00000000000000000000000000000000)
echo "== 3. an offer for other hardware: $OTHER"
run other "$OTHER"
summary other
