#!/usr/bin/env bash
# Issue 16 on the GPU machine, one call: every NVML read of the hardware checks on the
# real GPUs (hack/gpu/nvml_health.py, with the zipapp's own pynvml), nvidia-smi's view of
# the same state, the real-GPU tests, and the checker's output. Results under $OUT.
#   bash hack/gpu/run_health.sh            (repo root; needs dist/vllm-preflight.pyz)
set -u
OUT=${OUT:-/tmp/preflight-gpu}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
unset CUDA_VISIBLE_DEVICES
PY=${PY:-python3}
ZIP=dist/vllm-preflight.pyz
N=$(nvidia-smi -L | wc -l)
{
  date -u +%FT%TZ; uname -r
  nvidia-smi --query-gpu=index,name,pci.bus_id,uuid,driver_version,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,clocks_event_reasons.active --format=csv
  nvidia-smi -q -d PCIE,PERFORMANCE,ROW_REMAPPER,PAGE_RETIREMENT
  nvidia-smi nvlink --status
  nvidia-smi -q | grep -i -A4 fabric
} >"$OUT/smi.txt" 2>&1
echo "== nvml_health"
PYTHONPATH="$ZIP/src" timeout 60 "$PY" hack/gpu/nvml_health.py --json "$OUT/nvml_health.json" \
  >"$OUT/nvml_health.txt" 2>&1
echo "nvml_health exit $?"
echo "== pytest tests/gpu"
PYTHONPATH="$PWD/initcontainer:$PWD/dev:$PWD" PREFLIGHT_GPU_EVIDENCE="$OUT" PREFLIGHT_ZIPAPP="$ZIP" \
  timeout 330 "$PY" -m pytest -m gpu tests/gpu --noconftest -p no:cacheprovider -v -rA \
  >"$OUT/pytest.log" 2>&1
echo "pytest exit $?"
grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed" "$OUT/pytest.log" | tail -30
echo "== checker"
{
  echo "\$ $PY $ZIP --tp $N"; "$PY" "$ZIP" --tp "$N" --json "$OUT/report.json"; echo "exit $?"
} >"$OUT/cli.txt" 2>&1
cat "$OUT/cli.txt"
