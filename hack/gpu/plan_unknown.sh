#!/usr/bin/env bash
# The checker with the plan unknown (issue 35 item 3) and the redaction layer (issue 36
# item 2) on a real GPU: what docs/CHECKS.md "Plan unknown" and "What never leaves a pod"
# say, checked against the real driver.
#   1. PREFLIGHT_PLAN_UNKNOWN under Enforce, no plan: every GPU is checked, `plan` warns
#      "plan unknown: GPU count not compared", exit 0;
#   2. the same with PREFLIGHT_VLLM_ARGS readable at run time: the plan is recovered;
#   3. a model source whose HF_ENDPOINT carries a password and HF_TOKEN a token: neither
#      appears in stdout, the JSON report or the termination message.
#   bash hack/gpu/plan_unknown.sh      (repo root; needs dist/vllm-preflight.pyz)
set -u
PY=${PY:-python3}
ZIP=${ZIP:-dist/vllm-preflight.pyz}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
WHY='vllm-command-unparsed: strace -f was not read'
echo "== 1. plan unknown, Enforce"
PREFLIGHT_ACTION=Enforce PREFLIGHT_PLAN_UNKNOWN="$WHY" "$PY" "$ZIP" check --json "$OUT/unknown.json" \
  > "$OUT/unknown.txt" 2>&1
echo "rc=$?"; grep -E "plan|gpu-count|context|verdict" "$OUT/unknown.txt" | head -12
echo "== 2. plan unknown, recovered from PREFLIGHT_VLLM_ARGS"
PREFLIGHT_ACTION=Enforce PREFLIGHT_PLAN_UNKNOWN="$WHY" \
  PREFLIGHT_VLLM_ARGS="vllm serve m --tensor-parallel-size 1" \
  "$PY" "$ZIP" check > "$OUT/recovered.txt" 2>&1
echo "rc=$?"; grep -E "plan|gpu-count|verdict" "$OUT/recovered.txt" | head -6
echo "== 3. secrets through the model source"
SECRET_PW=s3cretPassw0rd SECRET_TOKEN=hf_SeCrEtToKeN123456
HF_ENDPOINT="http://mirror:$SECRET_PW@127.0.0.1:9" HF_TOKEN="$SECRET_TOKEN" \
  PREFLIGHT_SECRET_ENV=HF_TOKEN PREFLIGHT_VLLM_ARGS="vllm serve org/model" \
  "$PY" "$ZIP" check --tp 1 --json "$OUT/secret.json" \
  --termination-log "$OUT/secret.term" > "$OUT/secret.txt" 2>&1
echo "rc=$?"; grep -E "model-source" "$OUT/secret.txt" | head -3
for s in "$SECRET_PW" "$SECRET_TOKEN"; do
  echo "occurrences of a secret: $(cat "$OUT"/secret.* | grep -c -- "$s")"
done
echo "redaction marks: $(cat "$OUT"/secret.* | grep -o '\*\*\*' | wc -l)"
