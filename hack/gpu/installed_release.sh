#!/usr/bin/env bash
# The checker on a real GPU with the vLLM release an image holds (docs/GPU_RUNS.md, runs
# 24 on): the device image has no vLLM, so the first lines of vLLM's distribution metadata
# are written on PYTHONPATH (0.6.3, 0.11.2, and 0.6.3 beside a distribution declaring a
# `vllm.general_plugins` entry point), and the zipapp judges Qwen3-0.6B (config.json only,
# tests/data/models) by the release it finds. Then the fast tier, the deep tier and the
# real-GPU tests.
#   bash hack/gpu/installed_release.sh      (repo root; needs dist/vllm-preflight.pyz)
set -u
OUT=${OUT:-/tmp/preflight-gpu}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
unset CUDA_VISIBLE_DEVICES
PY=${PY:-python3}
ZIP=dist/vllm-preflight.pyz
M=tests/data/models/Qwen/Qwen3-0.6B
S=$(mktemp -d)
meta() {  # meta DIR VERSION: vLLM's dist-info as an installed wheel has it (name, version)
  mkdir -p "$1/vllm-$2.dist-info"
  printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s\n' "$2" >"$1/vllm-$2.dist-info/METADATA"
}
meta "$S/0.6.3" 0.6.3
meta "$S/0.11.2" 0.11.2
meta "$S/plug" 0.6.3
mkdir -p "$S/plug/acme_plugin-1.0.dist-info"
printf 'Metadata-Version: 2.1\nName: acme-plugin\nVersion: 1.0\n' \
  >"$S/plug/acme_plugin-1.0.dist-info/METADATA"
printf '[vllm.general_plugins]\nacme = acme_plugin:register\n' \
  >"$S/plug/acme_plugin-1.0.dist-info/entry_points.txt"

{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  "$PY" -c 'import sys, torch; print(sys.version.split()[0], torch.__version__, torch.version.cuda)'
} >"$OUT/summary.txt" 2>&1
TIMEFORMAT="fast wall %R s"
for i in 1 2 3; do
  { time "$PY" "$ZIP" check --tp 1 --json "$OUT/fast$i.json" >"$OUT/fast$i.txt" 2>&1; } \
    2>>"$OUT/summary.txt"
  "$PY" -c 'import json, sys; print("fast verdict", json.load(open(sys.argv[1]))["verdict"])' \
    "$OUT/fast$i.json" >>"$OUT/summary.txt" 2>&1
done
for v in 0.6.3 0.11.2 plug; do
  PYTHONPATH="$S/$v" "$PY" "$ZIP" check --tp 1 --vllm-args "vllm serve $M -tp 1" \
    --json "$OUT/arch-$v.json" >"$OUT/arch-$v.txt" 2>&1
  echo "arch $v exit $?" >>"$OUT/summary.txt"
done
PYTHONPATH="$S/0.11.2" timeout 240 "$PY" "$ZIP" check --tp 1 --deep --json "$OUT/deep.json" \
  >"$OUT/deep.txt" 2>&1
echo "deep exit $?" >>"$OUT/summary.txt"
PYTHONPATH="$PWD/initcontainer:$PWD/dev:$PWD" PREFLIGHT_ZIPAPP="$ZIP" timeout 300 \
  "$PY" -m pytest -q -m gpu tests/gpu --noconftest -p no:cacheprovider >"$OUT/pytest.log" 2>&1
echo "pytest exit $?" >>"$OUT/summary.txt"
tail -1 "$OUT/pytest.log" >>"$OUT/summary.txt"
cat "$OUT/summary.txt"
