"""The tables of vLLM's options the parser reads: the tracked options (those that size the
plan, and the few facts the rules need) with every alias vLLM registers, and the other
options as far as their arity matters (no value, several values, a long or short name).

Separate from the parser steps: it is data kept in step with vLLM's argument parser, and
changes when vLLM adds an option, not when the reading changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Tuple

_INT = "int"
_FLOAT = "float"
_STR = "str"
_BOOL = "bool"  # argparse.BooleanOptionalAction: --x and --no-x, no value
_FLAG = "flag"  # store_true: --x only


@dataclass(frozen=True)
class _Opt:
    dest: str
    kind: str
    names: Tuple[str, ...]  # long name first, then short aliases


# The options that decide the plan (and the few facts the rules need), with every alias
# vLLM registers for them.
_TRACKED: Tuple[_Opt, ...] = (
    _Opt("model", _STR, ("--model",)),
    _Opt("tensor_parallel_size", _INT, ("--tensor-parallel-size", "-tp")),
    _Opt("pipeline_parallel_size", _INT, ("--pipeline-parallel-size", "-pp")),
    _Opt("data_parallel_size", _INT, ("--data-parallel-size", "-dp")),
    _Opt("data_parallel_size_local", _INT, ("--data-parallel-size-local", "-dpl")),
    _Opt("data_parallel_rank", _INT, ("--data-parallel-rank", "-dpn")),
    _Opt("data_parallel_start_rank", _INT, ("--data-parallel-start-rank", "-dpr")),
    _Opt("decode_context_parallel_size", _INT, ("--decode-context-parallel-size", "-dcp")),
    _Opt("prefill_context_parallel_size", _INT, ("--prefill-context-parallel-size", "-pcp")),
    _Opt("nnodes", _INT, ("--nnodes", "-n")),
    _Opt("node_rank", _INT, ("--node-rank", "-r")),
    _Opt("data_parallel_external_lb", _BOOL, ("--data-parallel-external-lb", "-dpe")),
    _Opt("data_parallel_hybrid_lb", _BOOL, ("--data-parallel-hybrid-lb", "-dph")),
    _Opt(
        "data_parallel_multi_port_external_lb",
        _BOOL,
        ("--data-parallel-multi-port-external-lb",),
    ),
    _Opt("data_parallel_backend", _STR, ("--data-parallel-backend", "-dpb")),
    _Opt("distributed_executor_backend", _STR, ("--distributed-executor-backend",)),
    _Opt("enable_expert_parallel", _BOOL, ("--enable-expert-parallel", "-ep")),
    _Opt("headless", _FLAG, ("--headless",)),
    _Opt("api_server_count", _INT, ("--api-server-count", "-asc")),
    _Opt("port", _INT, ("--port",)),
    _Opt("host", _STR, ("--host",)),
    _Opt("gpu_memory_utilization", _FLOAT, ("--gpu-memory-utilization",)),
    # read by the model rules (preflight_contract.modelfacts)
    _Opt("max_model_len", _STR, ("--max-model-len",)),
    _Opt("dtype", _STR, ("--dtype",)),
    _Opt("quantization", _STR, ("--quantization", "-q")),
    # read by the model-source check and the probe rule (where the weights come from,
    # how long start-up takes)
    _Opt("revision", _STR, ("--revision",)),
    _Opt("download_dir", _STR, ("--download-dir",)),
    _Opt("tokenizer", _STR, ("--tokenizer",)),
    _Opt("load_format", _STR, ("--load-format",)),
    _Opt("enforce_eager", _BOOL, ("--enforce-eager",)),
    # read by the model rules: which config class transformers builds (auto_map), and
    # what takes weights off the GPU or lifts the gpu-memory-utilization budget
    _Opt("trust_remote_code", _BOOL, ("--trust-remote-code",)),
    _Opt("cpu_offload_gb", _STR, ("--cpu-offload-gb",)),
    _Opt("kv_cache_memory_bytes", _STR, ("--kv-cache-memory-bytes",)),
)


# Other vLLM options that take no value (store_true / BooleanOptionalAction). Needed to
# know that the token after them is not their value (`vllm serve --enforce-eager MODEL`).
def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_OTHER_NO_VALUE = _words(
    """
    --enable-prefix-caching --enable-chunked-prefill
    --disable-log-stats --disable-log-requests --enable-log-requests --enable-auto-tool-choice
    --disable-custom-all-reduce --skip-tokenizer-init --enable-lora --disable-sliding-window
    --disable-cascade-attn --enable-prompt-embeds --enable-sleep-mode --enable-eplb
    --enable-dbo --ray-workers-use-nsight --disable-fastapi-docs --enable-request-id-headers
    --disable-uvicorn-access-log --allow-credentials --return-tokens-as-token-ids
    --enable-server-load-tracking --enable-force-include-usage
    --enable-tokenizer-info-endpoint --enable-log-outputs --enable-prompt-tokens-details
    --enable-ssl-refresh --use-tqdm-on-load --calculate-kv-scales --kv-sharing-fast-prefill
    --async-scheduling --disable-chunked-mm-input --disable-hybrid-kv-cache-manager
    --enable-mm-embeds --interleave-mm-strings --skip-mm-profiling --fully-sharded-loras
    --grpc --aggregate-engine-logging --tokens-only --disable-nccl-for-dp-synchronization
    --enable-return-routed-experts --allow-deprecated-quantization --mm-encoder-only
    --exclude-tools-when-tool-choice-none --trust-request-chat-template --enable-log-deltas
    --log-error-stack --enable-offline-docs --enable-fault-tolerance
    --shutdown-on-fault-tolerance-failure --kv-cache-metrics --cudagraph-metrics
    --enable-layerwise-nvtx-tracing --enable-mfu-metrics --enable-logging-iteration-details
    --enable-mm-processor-stats --enable-tower-connector-lora --specialize-active-lora
    --enable-elastic-ep --enable-ep-weight-filter --numa-bind --enable-per-request-metrics
    --enable-flash-late-interaction --disable-frontend-multiprocessing --enable-reasoning
    --worker-use-ray --engine-use-ray --disable-async-output-proc --enable-lora-bias
    --enable-prompt-adapter --use-v2-block-manager --help -h
    """
)

# Options that take one or more values (nargs="+"): they swallow every following
# non-option token, the model included.
_OTHER_MANY_VALUES = _words(
    """
    --served-model-name --lora-modules --allowed-media-domains --cudagraph-capture-sizes
    --cuda-graph-sizes --api-key --ignore-patterns --logits-processors
    --collect-detailed-traces --numa-bind-nodes --numa-bind-cpus --prompt-adapters
    """
)

# Other long options, so that unique-prefix abbreviations are resolved only when they are
# unique among vLLM's real options (argparse's allow_abbrev, which vLLM leaves on).
_OTHER_LONG = _words(
    """
    --runner --convert --tokenizer-mode --dtype --seed --hf-config-path
    --allowed-local-media-path --code-revision --tokenizer-revision
    --max-model-len --quantization --max-logprobs --logprobs-mode --config-format --hf-token
    --hf-overrides --pooler-config --logits-processor-pattern --generation-config
    --override-generation-config --model-impl --override-attention-dtype
    --io-processor-plugin --model-weights --model-loader-extra-config
    --safetensors-load-strategy --pt-load-map-location --attention-backend
    --reasoning-parser --reasoning-parser-plugin --master-addr --master-port
    --dcp-kv-cache-interleave-size --cp-kv-cache-interleave-size --dcp-comm-backend
    --data-parallel-address --data-parallel-rpc-port --all2all-backend --ubatch-size
    --dbo-decode-token-threshold --dbo-prefill-token-threshold --eplb-config
    --expert-placement-strategy --max-parallel-loading-workers --worker-cls
    --worker-extension-cls --block-size --swap-space
    --kv-cache-dtype --num-gpu-blocks-override --prefix-caching-hash-algo
    --mamba-cache-dtype --mamba-ssm-cache-dtype --mamba-block-size --mamba-cache-mode
    --kv-offloading-size --kv-offloading-backend --limit-mm-per-prompt --media-io-kwargs
    --mm-processor-kwargs --mm-processor-cache-gb --mm-processor-cache-type
    --mm-shm-cache-max-object-size-mb --mm-encoder-tp-mode --mm-encoder-attn-backend
    --video-pruning-rate --max-loras --max-lora-rank --lora-dtype --max-cpu-loras
    --default-mm-loras --show-hidden-metrics-for-version --otlp-traces-endpoint
    --kv-cache-metrics-sample --max-num-batched-tokens --max-num-seqs
    --max-num-partial-prefills --max-long-partial-prefills --long-prefill-token-threshold
    --scheduling-policy --scheduler-cls --stream-interval --max-cudagraph-capture-size
    --speculative-config --kv-transfer-config --kv-events-config --ec-transfer-config
    --compilation-config --attention-config --additional-config --structured-outputs-config
    --profiler-config --afd-config --optimization-level --weight-transfer-config
    --engine-recovery-timeout --internal-fault-report-port --external-fault-notify-port
    --gloo-comm-timeout --chat-template --chat-template-content-format
    --default-chat-template-kwargs --response-role --tool-call-parser --tool-parser-plugin
    --tool-server --log-config-file --max-log-len --data-parallel-supervisor-port
    --dp-supervisor-probe-interval-s --dp-supervisor-probe-timeout-s
    --dp-supervisor-probe-failure-threshold --uds --uvicorn-log-level
    --disable-access-log-for-endpoints --allowed-origins --allowed-methods
    --allowed-headers --ssl-keyfile --ssl-certfile --ssl-ca-certs --ssl-cert-reqs
    --ssl-ciphers --root-path --middleware --h11-max-incomplete-event-size
    --h11-max-header-count --config --fingerprint-mode --fingerprint-value
    --cohere-is-reasoning-model --cohere-format
    """
)

_OTHER_SHORT_WITH_VALUE = frozenset(("-q", "-cc", "-ac"))

_BY_NAME: Dict[str, Tuple[_Opt, bool]] = {}  # option string -> (option, is the --no- form)
for _opt in _TRACKED:
    for _name in _opt.names:
        _BY_NAME[_name] = (_opt, False)
    if _opt.kind == _BOOL:
        _BY_NAME["--no-" + _opt.names[0][2:]] = (_opt, True)
_TRACKED_BY_DEST: Dict[str, _Opt] = {o.dest: o for o in _TRACKED}

_ALL_LONG: Tuple[str, ...] = tuple(
    sorted(
        {n for n in _BY_NAME if n.startswith("--")}
        | {n for n in _OTHER_NO_VALUE if n.startswith("--")}
        | _OTHER_MANY_VALUES
        | _OTHER_LONG
    )
)
_ALL_SHORT: Tuple[str, ...] = tuple(
    sorted({n for n in _BY_NAME if not n.startswith("--")} | _OTHER_SHORT_WITH_VALUE | {"-h"})
)


def _known_option(name: str) -> bool:
    """An option string vLLM registers, exactly as written (after FlexibleArgumentParser's
    underscores-to-dashes)."""
    return (
        name in _BY_NAME
        or name in _OTHER_NO_VALUE
        or name in _OTHER_MANY_VALUES
        or name in _OTHER_LONG
        or name in _OTHER_SHORT_WITH_VALUE
    )


# `--tp 4` is not an option anywhere in vLLM; people write it (and `tp: 4` in --config).
_SHORT_ALIAS_WORDS: Dict[str, str] = {
    n[1:]: o.names[0] for o in _TRACKED for n in o.names[1:] if len(n) > 2
}

# argparse treats "-1" and "-0.5" as values when no option looks like a negative number.
# The rules engine marks a value it cannot know (a Secret, the image's ENV) with NUL
# bytes; no real argument contains one (the kernel's argv is NUL-terminated).
_UNKNOWN_MARK = "\x00"

_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")
