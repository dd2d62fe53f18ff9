#!/usr/bin/env bash
# The real checker (the zipapp) on the GPU machine against a partial model copy: a model
# directory whose only weight file is cut short (Qwen2.5-0.5B-Instruct's config.json from
# tests/data/models; a safetensors header naming more bytes than the file holds). Without
# PREFLIGHT_MODEL_WRITERS `model-source` fails; with an init container named as the writer
# (what the injector sets when one mounts the model's volume writable) it warns.
#   bash hack/gpu/model_writers.sh           (repo root; needs dist/vllm-preflight.pyz)
set -u
PY=${PY:-python3}
ZIP=${ZIP:-dist/vllm-preflight.pyz}
M=$(mktemp -d)/Qwen2.5-0.5B-Instruct
mkdir -p "$M"
cp tests/data/models/Qwen/Qwen2.5-0.5B-Instruct/config.json "$M/"
"$PY" - "$M/model.safetensors" <<'PY'
import json, struct, sys
header = json.dumps({"w": {"dtype": "BF16", "shape": [1024, 1024], "data_offsets": [0, 2097152]}}).encode()
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header + b"\0" * 1000)  # 2 MiB promised, 1000 bytes there
PY
for writers in "" "model-downloader"; do
  echo "== PREFLIGHT_MODEL_WRITERS='$writers'"
  env PREFLIGHT_MODEL_WRITERS="$writers" "$PY" "$ZIP" --tp 1 --vllm-args "vllm serve $M -tp 1" 2>&1 \
    | grep -E "model-source|verdict" | cut -c1-400
done
