"""The time check 'model-source' adds when nothing needs the network (issue 25: at most
100 ms): a mounted model directory, and a complete Hugging Face cache under
HF_HUB_OFFLINE, each of ``--shards`` real safetensors files (a header of ``--tensors``
entries each, as a large checkpoint's shards have, and a little data; what the check reads
is the header, not the tensors).

    python hack/bench/model_source.py                      # 163 shards (DeepSeek-R1's count)
    python hack/bench/model_source.py --dir /models/llama  # a real model directory as it is
    python hack/bench/model_source.py --tmp /dev/shm       # the directory on tmpfs

Prints the median and the worst of ``--runs`` cold-process-free runs, in ms. The page cache
is warm after the first run: on a network volume the first run is the one that counts
(run it once on a fresh mount, ``--runs 1``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import struct
import tempfile
import time
from pathlib import Path

from preflight_contract.modelsource import INDEX, check_source

COMMIT = "0" * 40


def shard(path: Path, tensors: int) -> None:
    header: dict[str, object] = {}
    offset = 0
    for i in range(tensors):
        header[f"model.layers.{i}.mlp.weight"] = {
            "dtype": "BF16",
            "shape": [4],
            "data_offsets": [offset, offset + 8],
        }
        offset += 8
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(offset))


def make_model(root: Path, shards: int, tensors: int) -> Path:
    root.mkdir(parents=True)
    (root / "config.json").write_text('{"model_type": "llama"}')
    (root / "tokenizer.json").write_text("{}")
    names = [f"model-{i + 1:05d}-of-{shards:05d}.safetensors" for i in range(shards)]
    for name in names:
        shard(root / name, tensors)
    # the index names every tensor, as a real one does (DeepSeek-V3: ~90k entries)
    weight_map = {f"model.layers.{i}.{t}.weight": name for i, name in enumerate(names)
                  for t in range(tensors)}  # fmt: skip
    (root / INDEX).write_text(json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}))
    return root


def timed(runs: int, call: object) -> list[float]:
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        ready = call()  # type: ignore[operator]
        out.append((time.perf_counter() - started) * 1000.0)
        assert ready.status == "pass", ready.message
    return out


def report(what: str, ms: list[float]) -> None:
    print(f"{what}: median {statistics.median(ms):.1f} ms, max {max(ms):.1f} ms ({len(ms)} runs)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shards", type=int, default=163)
    # DeepSeek-V3: 163 shards, ~91k tensors in its index, ~560 a shard
    parser.add_argument("--tensors", type=int, default=560, help="tensors per shard")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", type=Path, help="a real model directory instead")
    parser.add_argument("--tmp", type=Path, help="where to build the synthetic model")
    args = parser.parse_args()
    if args.dir is not None:
        report(f"{args.dir}", timed(args.runs, lambda: check_source(str(args.dir), {})))
        return
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        model = make_model(Path(tmp) / "model", args.shards, args.tensors)
        index = json.loads((model / INDEX).read_text())
        # as the checker runs it: the model rules' look-up (model-config-unknown) has
        # parsed the index already and model-source reuses it: this is the added time
        report(
            f"added by model-source, directory of {args.shards} shards",
            timed(args.runs, lambda: check_source(str(model), {}, known_index=(str(model), index))),
        )
        report(
            f"check_source alone (index parsed again), {args.shards} shards",
            timed(args.runs, lambda: check_source(str(model), {})),
        )
        repo = Path(tmp) / "hub" / "models--acme--big"
        make_model(repo / "snapshots" / COMMIT, args.shards, args.tensors)
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(COMMIT)
        env = {"HF_HUB_CACHE": str(Path(tmp) / "hub"), "HF_HUB_OFFLINE": "1"}
        snapshot = str(repo / "snapshots" / COMMIT)
        report(
            f"added by model-source, complete cache under HF_HUB_OFFLINE, {args.shards} shards",
            timed(args.runs, lambda: check_source("acme/big", env, known_index=(snapshot, index))),
        )


if __name__ == "__main__":
    main()
