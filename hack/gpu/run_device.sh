#!/usr/bin/env bash
# One call of the device machine proves the checker on real GPUs (docs/GPU_RUNS.md):
# the real-GPU tests (issues 2 and 8), the CUDA_VISIBLE_DEVICES table against the fake,
# the benchmark, and the human output of typical runs. Results go to $OUT (8 files).
#   bash hack/gpu/run_device.sh            (repo root; needs dist/vllm-preflight.pyz)
set -u
OUT=${OUT:-/tmp/preflight-gpu}
mkdir -p "$OUT"
# NVLink multicast stays off on these shared machines (device README).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/initcontainer:$PWD/dev:$PWD"
unset CUDA_VISIBLE_DEVICES
PY=${PY:-python3}
ZIP=dist/vllm-preflight.pyz
REPS=${REPS:-5}
stage() { echo "== $(date -u +%T) $*"; }

{
  date -u +%FT%TZ
  uname -r
  nvidia-smi --query-gpu=index,name,pci.bus_id,uuid,driver_version,memory.total,memory.used,compute_mode,mig.mode.current --format=csv
  nvidia-smi topo -m
  "$PY" -c 'import sys, torch, pynvml; print(sys.version.split()[0], torch.__version__, torch.version.cuda)'
  df -h /dev/shm | tail -1
  command -v cc gcc
} >"$OUT/summary.txt" 2>&1

stage "pytest tests/gpu"
PREFLIGHT_GPU_EVIDENCE="$OUT" PREFLIGHT_ZIPAPP="$ZIP" timeout 240 \
  "$PY" -m pytest -m gpu tests/gpu --noconftest -p no:cacheprovider -v -rA >"$OUT/pytest.log" 2>&1
echo "pytest exit $?" >>"$OUT/summary.txt"
grep -E "passed|failed|error" "$OUT/pytest.log" | tail -3

stage "CUDA_VISIBLE_DEVICES table"
timeout 90 "$PY" hack/gpu/cvd_table.py >"$OUT/cvd.txt" 2>&1
tail -2 "$OUT/cvd.txt"

stage "benchmark, every GPU"
timeout 200 "$PY" hack/gpu/bench_check.py --zipapp "$ZIP" --reps "$REPS" --deep \
  --json "$OUT/bench.json" >"$OUT/bench.txt" 2>&1
if [ "$(nvidia-smi -L | wc -l)" -gt 2 ]; then
  stage "benchmark, two GPUs (CUDA_VISIBLE_DEVICES=0,1)"
  timeout 150 "$PY" hack/gpu/bench_check.py --zipapp "$ZIP" --reps "$REPS" --deep \
    --visible 0,1 --json "$OUT/bench2.json" >>"$OUT/bench.txt" 2>&1
fi
cat "$OUT/bench.txt"

stage "CLI examples"
N=$(nvidia-smi -L | wc -l)
{
  run() { echo; echo "\$ $*"; env "$@"; echo "exit $?"; }
  run "$PY" "$ZIP" --tp "$N" --termination-log /tmp/termination-log
  echo "--- termination message: $(wc -c </tmp/termination-log) bytes"
  run CUDA_VISIBLE_DEVICES=0,abc,1 "$PY" "$ZIP" --tp 2
  run CUDA_VISIBLE_DEVICES=0,0 "$PY" "$ZIP" --tp 2 --action Warn
  run "$PY" "$ZIP" --tp four
  run "$PY" "$ZIP" --tp "$N" --deep
} >"$OUT/cli.txt" 2>&1
stage "done"
