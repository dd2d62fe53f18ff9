"""The group phase, pure part: who is in the group, what members say, and the verdict.

A multi-node vLLM engine (a LeaderWorkerSet group running Ray, ``--nnodes`` over vLLM's
multiprocessing executor, or multi-node data parallelism) starts only when every pod of the
group is healthy *and* agrees with the others. After its local checks each pod's check
meets the others over TCP at the leader's address (``groupnet`` holds the socket code);
members send their facts, the leader (member 0) compares them with its own and sends
every member the verdict. Nothing here touches the network or the clock: the framing,
the message checks and the comparison are plain functions, tested without sockets.

Wire format: every frame is ``MAGIC`` (4 bytes), a big-endian 4-byte length, then that
many bytes of UTF-8 JSON, at most ``MAX_FRAME``. Anything else on the port (a port scanner,
an HTTP probe, a member of another group) is refused with a reason, never a crash.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from preflight_contract import envnames

PROTOCOL = "vllm-preflight-group/1"
MAGIC = b"VPG1"
HEADER = struct.Struct(">4sI")
MAX_FRAME = 64 * 1024
# Not one of vLLM's ports (master_port 29501, data_parallel_master_port 29500,
# data_parallel_rpc_port 29550: vllm/config/parallel.py), Ray's (6379, 8265, 10001) or
# torch.distributed's customary 29500.
DEFAULT_PORT = 29600
MAX_GROUP_SIZE = 1024
# The members the leader lists with their identity in its report's group summary (which
# rides in the 2 KiB termination message: ~60 bytes each). A group larger than this has
# its members past the first ROSTER_MAX counted but not listed, so the operator does not
# call it proven (docs/CHECKS.md, "Who is a member").
ROSTER_MAX = 16
_MAX_TEXT = 256
_MAX_LIST = 64

KIND_LWS = "lws"
KIND_NNODES = "nnodes"
KIND_DP = "multi-node-dp"
KIND_EXPLICIT = "explicit"

# Where a member's engine arguments come from. One definition of "vLLM's command line in
# a container" exists: the rules' shell interpreter in the operator (core/rules/command.py
# and the shell modules it drives), which the injector hands over as PREFLIGHT_VLLM_ARGS.
# Without it the arguments are not compared, and the verdict says so (a warning).
ARGS_FROM_RULES = "vllm-args"  # --vllm-args / PREFLIGHT_VLLM_ARGS: compared
ARGS_FROM_RAY_WORKER = "ray-worker"  # PREFLIGHT_GROUP_ROLE=ray-worker: no vLLM in this pod
ARGS_FROM_NONE = "unknown"  # the operator could not read the command line exactly
ARGS_FROM_LEGACY = "legacy"  # an older operator's PREFLIGHT_GROUP_ARGS, no longer read
ARGS_FROM: Tuple[str, ...] = (
    ARGS_FROM_RULES,
    ARGS_FROM_RAY_WORKER,
    ARGS_FROM_NONE,
    ARGS_FROM_LEGACY,
)

# The vLLM options every node of one engine must agree on (docs/RULES.md, "LeaderWorkerSet
# consistency"); their hash is what members compare.
ENGINE_KEYS: Tuple[str, ...] = (
    "model",
    "revision",
    "tokenizer",
    "tp",
    "pp",
    "dp",
    "dcp",
    "pcp",
    "nnodes",
    "max_model_len",
    "dtype",
    "quantization",
    "kv_cache_dtype",
    "enable_expert_parallel",
    "distributed_executor_backend",
    "data_parallel_backend",
)


class GroupError(ValueError):
    """The group's settings are malformed; the message names the variable."""


class ProtocolError(ValueError):
    """What arrived on the group port is not a member of this group speaking this
    protocol; the message says what it was."""


@dataclass(frozen=True)
class GroupConfig:
    """This pod's place in its group."""

    kind: str
    group_id: str
    address: str  # the leader's address (DNS name or IP)
    port: int
    index: int  # 0 = the leader
    size: int
    bind: str = ""  # the leader listens here ("" = every interface)
    source: str = ""  # where the settings came from, for the report
    node: str = ""  # PREFLIGHT_NODE_NAME (the injector sets it from spec.nodeName)
    backend: str = ""  # PREFLIGHT_GROUP_BACKEND: force the deep tier's backend (gloo)
    # the must-match vLLM options of this pod, from --vllm-args / PREFLIGHT_VLLM_ARGS only
    args: Dict[str, str] = field(default_factory=dict)
    # where they came from (ARGS_FROM_*): the leader says which members it did not compare
    args_from: str = ""
    # this pod's name and uid (PREFLIGHT_POD_NAME / PREFLIGHT_POD_UID, downward API): what a
    # member presents to its leader, "" when not set or malformed (see ``roster_entry``)
    pod: str = ""
    uid: str = ""

    @property
    def is_leader(self) -> bool:
        return self.index == 0


def _int(environ: Mapping[str, str], name: str, low: int, high: int) -> Optional[int]:
    text = environ.get(name)
    if text is None or text.strip() == "":
        return None
    if not re.fullmatch(r"\s*[0-9]+\s*", text):
        raise GroupError(f"{name}={text!r} is not a whole number")
    value = int(text)
    if not low <= value <= high:
        raise GroupError(f"{name}={text!r} must be between {low} and {high}")
    return value


def _option(argv: Sequence[str], names: Sequence[str]) -> Optional[str]:
    """The last value of a long option (``--x v`` or ``--x=v``, underscores allowed)."""
    wanted = set(names) | {"--" + n[2:].replace("-", "_") for n in names if n.startswith("--")}
    value: Optional[str] = None
    for i, word in enumerate(argv):
        name, eq, explicit = word.partition("=")
        if name in wanted:
            if eq:
                value = explicit
            elif i + 1 < len(argv):
                value = argv[i + 1]
    return value


def group_config(
    environ: Mapping[str, str], vllm_argv: Optional[Sequence[str]] = None
) -> Optional[GroupConfig]:
    """The group this pod belongs to, or None when it is not part of one.

    In order: the injector's ``PREFLIGHT_GROUP_*``; a LeaderWorkerSet's own
    ``LWS_LEADER_ADDRESS`` / ``LWS_GROUP_SIZE`` / ``LWS_WORKER_INDEX``; vLLM's
    ``--nnodes N --node-rank R --master-addr A``; multi-node DP's ``-dp N -dpl M
    --data-parallel-address A --data-parallel-start-rank S`` (index S / M). The port is
    ``PREFLIGHT_GROUP_PORT`` (default 29600). ``PREFLIGHT_GROUP=off`` turns the phase off.
    """
    if environ.get(envnames.GROUP, "").strip().lower() in ("off", "0", "false", "no"):
        return None
    port = _int(environ, envnames.GROUP_PORT, 1, 65535) or DEFAULT_PORT
    bind = environ.get(envnames.GROUP_BIND, "").strip()
    address = environ.get(envnames.GROUP_ADDRESS, "").strip()
    size = _int(environ, envnames.GROUP_SIZE, 1, MAX_GROUP_SIZE)
    index = _int(environ, envnames.GROUP_INDEX, 0, MAX_GROUP_SIZE)
    kind, source = KIND_EXPLICIT, "PREFLIGHT_GROUP_*"
    lws_address = environ.get("LWS_LEADER_ADDRESS", "").strip()
    # A LeaderWorkerSet's env alone is not enough: a Ray group's workers get no check
    # (no vLLM container), so its leader would wait in vain; the injector opts a pod in
    # (PREFLIGHT_GROUP_PORT) only when every member runs vLLM, and so the check.
    opted_in = envnames.GROUP_PORT in environ or environ.get(envnames.GROUP, "") == "on"
    if lws_address and opted_in:
        address = address or lws_address
        size = size if size is not None else _int(environ, "LWS_GROUP_SIZE", 1, MAX_GROUP_SIZE)
        if index is None:
            index = _int(environ, "LWS_WORKER_INDEX", 0, MAX_GROUP_SIZE)
        kind, source = KIND_LWS, "LWS_LEADER_ADDRESS, LWS_GROUP_SIZE, LWS_WORKER_INDEX"
    argv = list(vllm_argv or [])
    if not address and argv:
        found = _group_from_vllm_argv(argv)
        if found is not None:
            address, size, index, kind, source = found
    if not address:
        if size is not None or index is not None:
            raise GroupError(
                "PREFLIGHT_GROUP_SIZE/PREFLIGHT_GROUP_INDEX are set without "
                "PREFLIGHT_GROUP_ADDRESS (the leader's address)"
            )
        return None
    if size is None:
        raise GroupError(f"the group at {address} has no size (set PREFLIGHT_GROUP_SIZE)")
    index = 0 if index is None else index
    if index >= size:
        raise GroupError(f"member index {index} is outside a group of {size} (0..{size - 1})")
    group_id = environ.get(envnames.GROUP_ID, "").strip() or address
    backend = environ.get(envnames.GROUP_BACKEND, "").strip().lower()
    if backend not in ("", "nccl", "gloo"):
        raise GroupError(f"PREFLIGHT_GROUP_BACKEND={backend!r} is not one of nccl, gloo")
    node = environ.get(envnames.NODE_NAME) or environ.get("NODE_NAME") or ""
    args, args_from = engine_args(argv), _args_from(environ, argv)
    pod = pod_name(environ.get(envnames.POD_NAME)) or ""
    uid = pod_uid(environ.get(envnames.POD_UID)) or ""
    return GroupConfig(
        kind,
        group_id[:_MAX_TEXT],
        address,
        port,
        index,
        size,
        bind,
        source,
        node[:_MAX_TEXT],
        backend,
        args,
        args_from,
        pod,
        uid,
    )


# A pod's name (a DNS subdomain, at most 253) and uid (the API server's UUID), as a member
# presents them; anything else is dropped, never echoed into a report.
_POD_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
_POD_UID = re.compile(r"[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}")


def pod_name(value: Any) -> Optional[str]:
    text = value.strip() if isinstance(value, str) else ""
    return text if _POD_NAME.fullmatch(text) else None


def pod_uid(value: Any) -> Optional[str]:
    text = value.strip().lower() if isinstance(value, str) else ""
    return text if _POD_UID.fullmatch(text) else None


def _args_from(environ: Mapping[str, str], argv: Sequence[str]) -> str:
    """ARGS_FROM_* for this pod: its arguments are the rules' reading, or why there are none.

    Only the rules' reading is compared. The injector leaves PREFLIGHT_VLLM_ARGS out when it
    could not know the command line exactly (a ``--config`` file, a command substitution,
    over 16 KiB: core/inject_env.py vllm_args_value). A pod injected by an operator before
    PREFLIGHT_GROUP_ARGS was dropped still carries that raw copy of the container's command;
    it is not read (a second reading of a shell script disagreed with the first: the group
    compares less and says so, see docs/CHECKS.md "Group phase")."""
    if argv:
        return ARGS_FROM_RULES
    if environ.get(envnames.GROUP_ROLE, "").strip() == envnames.ROLE_RAY_WORKER:
        return ARGS_FROM_RAY_WORKER
    if environ.get(envnames.GROUP_ARGS, "").strip():
        return ARGS_FROM_LEGACY
    return ARGS_FROM_NONE


def _group_from_vllm_argv(argv: List[str]) -> Optional[Tuple[str, int, int, str, str]]:
    """(address, size, index, kind, source) that vLLM's own flags give, or None.

    ``--nnodes N --node-rank R --master-addr A``, else multi-node DP's ``-dp N -dpl M
    --data-parallel-address A --data-parallel-start-rank S`` (index S / M).
    """
    nnodes = _option(argv, ["--nnodes", "-n"])
    master = _option(argv, ["--master-addr"])
    dp_address = _option(argv, ["--data-parallel-address"])
    if nnodes and master and nnodes.isdigit() and int(nnodes) > 1:
        rank = _option(argv, ["--node-rank", "-r"]) or "0"
        if not rank.isdigit():
            raise GroupError(f"--node-rank {rank!r} is not a whole number")
        return master, int(nnodes), int(rank), KIND_NNODES, "--nnodes, --node-rank, --master-addr"
    if not dp_address:
        return None
    dp = _option(argv, ["--data-parallel-size", "-dp"]) or ""
    local = _option(argv, ["--data-parallel-size-local", "-dpl"]) or ""
    start = _option(argv, ["--data-parallel-start-rank", "-dpr"]) or "0"
    numbers = dp.isdigit() and local.isdigit() and start.isdigit()
    if numbers and 0 < int(local) < int(dp) and int(dp) % int(local) == 0:
        return (
            dp_address,
            int(dp) // int(local),
            int(start) // int(local),
            KIND_DP,
            "--data-parallel-address, -dp, -dpl, start rank",
        )
    return None


def engine_args(argv: Sequence[str]) -> Dict[str, str]:
    """The must-match vLLM options of one command line, as text ({} when none is vLLM's)."""
    if not argv:
        return {}
    try:
        from preflight_contract.vllm_args import parse_vllm_args  # noqa: PLC0415
    except ImportError:
        return {}
    parsed = parse_vllm_args(list(argv))
    plan = parsed.plan
    values: Dict[str, Optional[str]] = {
        "model": parsed.model,
        "revision": _option(argv, ["--revision"]),
        "tokenizer": _option(argv, ["--tokenizer"]),
        "tp": str(plan.tp),
        "pp": str(plan.pp),
        "dp": str(plan.dp),
        "dcp": str(plan.dcp),
        "pcp": str(plan.pcp),
        "nnodes": str(plan.nnodes),
        "max_model_len": parsed.max_model_len,
        "dtype": parsed.dtype,
        "quantization": parsed.quantization,
        "kv_cache_dtype": _option(argv, ["--kv-cache-dtype"]),
        "enable_expert_parallel": "true" if parsed.enable_expert_parallel else None,
        "distributed_executor_backend": plan.distributed_executor_backend,
        "data_parallel_backend": plan.data_parallel_backend,
    }
    if not parsed.plan_valid:  # a size vLLM would refuse, or a $VAR left unexpanded
        for key in ("tp", "pp", "dp", "dcp", "pcp", "nnodes"):
            values.pop(key, None)
    # a value still holding a shell variable is unknown here: never compared
    return {k: str(v)[:_MAX_TEXT] for k, v in values.items() if v is not None and "$" not in v}


def args_hash(args: Mapping[str, str]) -> str:
    """A short stable hash of the must-match options ("" when there are none)."""
    if not args:
        return ""
    blob = json.dumps(dict(sorted(args.items())), separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


# -- framing ------------------------------------------------------------------------------


def encode(message: Mapping[str, Any]) -> bytes:
    body = json.dumps(message, separators=(",", ":"), default=str).encode("utf-8")
    if len(body) > MAX_FRAME:
        raise ProtocolError(f"message of {len(body)} bytes is over the {MAX_FRAME} limit")
    return HEADER.pack(MAGIC, len(body)) + body


class FrameReader:
    """Incremental decoder: feed it bytes, get whole messages; garbage raises at once
    (the first 4 bytes already tell a stranger from a member)."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> List[Dict[str, Any]]:
        self._buffer += data
        out: List[Dict[str, Any]] = []
        while True:
            head = self._buffer[: len(MAGIC)]
            if head and not MAGIC.startswith(head):
                raise ProtocolError(f"not this protocol (starts with {_peek(self._buffer)})")
            if len(self._buffer) < HEADER.size:
                return out
            _, length = HEADER.unpack(self._buffer[: HEADER.size])
            if length > MAX_FRAME:
                raise ProtocolError(f"frame of {length} bytes is over the {MAX_FRAME} limit")
            if len(self._buffer) < HEADER.size + length:
                return out
            body = self._buffer[HEADER.size : HEADER.size + length]
            self._buffer = self._buffer[HEADER.size + length :]
            try:
                message = json.loads(body.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as exc:
                raise ProtocolError(f"frame is not UTF-8 JSON ({exc})") from None
            if not isinstance(message, dict):
                raise ProtocolError("frame is not a JSON object")
            out.append(message)

    @property
    def pending(self) -> int:
        return len(self._buffer)


def _peek(data: bytes) -> str:
    return repr(data[:16])


# -- messages -----------------------------------------------------------------------------


def _text(value: Any) -> Optional[str]:
    if value is None:
        return None
    return str(value)[:_MAX_TEXT]


def clean_facts(raw: Any) -> Dict[str, Any]:
    """A member's facts, bounded and typed: strings cut, lists capped, unknown keys
    dropped. Never raises on a well-framed but odd message."""
    facts = raw if isinstance(raw, dict) else {}
    out: Dict[str, Any] = {}
    texts = (
        "node",
        "host",
        "driver",
        "cuda_driver",
        "cuda_runtime",
        "nccl",
        "vllm",
        "torch",
        "image",
        "verdict",
        "backend",
    )
    for key in texts:
        text = _text(facts.get(key))
        if text is not None:
            out[key] = text
    for key, check in (("pod", pod_name), ("uid", pod_uid)):
        valid = check(facts.get(key))
        if valid is not None:
            out[key] = valid
    args_raw = facts.get("args")
    args = (
        {str(k)[:64]: str(v)[:_MAX_TEXT] for k, v in list(args_raw.items())[:_MAX_LIST]}
        if isinstance(args_raw, dict)
        else {}
    )
    out["args"] = {k: v for k, v in args.items() if k in ENGINE_KEYS}
    out["args_hash"] = args_hash(out["args"])
    if facts.get("args_from") in ARGS_FROM:  # absent from an older checker's facts
        out["args_from"] = facts["args_from"]
    for key in ("gpu_uuids", "gpu_names", "failed"):
        items = facts.get(key)
        if isinstance(items, list):
            out[key] = [str(i)[:_MAX_TEXT] for i in items[:_MAX_LIST]]
        else:
            out[key] = []
    count = facts.get("gpu_count")
    out["gpu_count"] = (
        count if isinstance(count, int) and not isinstance(count, bool) else len(out["gpu_uuids"])
    )
    local = facts.get("local_ms")
    out["local_ms"] = float(local) if isinstance(local, (int, float)) else None
    return out


def hello(config: GroupConfig, facts: Mapping[str, Any]) -> Dict[str, Any]:
    return {
        "proto": PROTOCOL,
        "type": "hello",
        "group": config.group_id,
        "index": config.index,
        "size": config.size,
        "facts": dict(facts),
    }


def read_hello(message: Mapping[str, Any], config: GroupConfig) -> Tuple[int, Dict[str, Any]]:
    """(index, facts) of a member's hello to this leader, or ProtocolError saying why not."""
    if message.get("proto") != PROTOCOL:
        raise ProtocolError(f"protocol {message.get('proto')!r}, expected {PROTOCOL!r}")
    if message.get("type") != "hello":
        raise ProtocolError(f"message type {message.get('type')!r}, expected 'hello'")
    if message.get("group") != config.group_id:
        raise ProtocolError(
            f"a member of group {_text(message.get('group'))!r}, not {config.group_id!r}"
        )
    index = message.get("index")
    if not isinstance(index, int) or isinstance(index, bool) or not 1 <= index < config.size:
        raise ProtocolError(f"member index {index!r} is not 1..{config.size - 1}")
    if message.get("size") != config.size:
        raise ProtocolError(
            f"member {index} believes the group has {message.get('size')!r} members, "
            f"the leader {config.size}"
        )
    return index, clean_facts(message.get("facts"))


def verdict_message(verdict: GroupVerdict) -> Dict[str, Any]:
    return {"proto": PROTOCOL, "type": "verdict", **verdict.to_dict()}


def read_verdict(message: Mapping[str, Any]) -> GroupVerdict:
    if message.get("proto") != PROTOCOL or message.get("type") != "verdict":
        raise ProtocolError("the leader's answer is not a verdict of this protocol")
    status = message.get("status")
    if status not in ("pass", "warn", "fail"):
        raise ProtocolError(f"verdict status {status!r}")
    evidence = message.get("evidence")
    return GroupVerdict(
        str(status),
        str(message.get("message", ""))[:2000],
        str(message.get("remediation", ""))[:1000],
        evidence if isinstance(evidence, dict) else {},
    )


# -- the verdict --------------------------------------------------------------------------


@dataclass
class GroupVerdict:
    status: str  # pass / warn / fail
    message: str
    remediation: str = ""
    evidence: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "status": self.status,
            "message": self.message,
            "remediation": self.remediation,
            "evidence": self.evidence,
        }


def member_name(index: int, facts: Optional[Mapping[str, Any]]) -> str:
    role = "leader" if index == 0 else f"worker {index}"
    node = (facts or {}).get("node") or (facts or {}).get("host")
    return f"{role} ({node})" if node else role


def missing_causes(config: GroupConfig) -> str:
    return (
        f"likely causes: the pod is not running yet (Pending: unschedulable, image pull, "
        f"its own init containers); a NetworkPolicy that blocks TCP port {config.port} "
        "between the group's pods; the port taken or filtered on the node "
        "(PREFLIGHT_GROUP_PORT, chart value injection.groupPort); the leader's name "
        f"{config.address!r} not resolving (a pod without an IP has no DNS record; "
        "LeaderWorkerSet's headless Service publishes not-ready addresses, a Service of "
        "your own needs publishNotReadyAddresses: true)"
    )


def judge(
    config: GroupConfig,
    members: Mapping[int, Mapping[str, Any]],
    *,
    waited_s: float,
    rejected: Sequence[str] = (),
    duplicates: Sequence[str] = (),
) -> GroupVerdict:
    """The leader's verdict over every member's facts (``members[0]`` is its own)."""
    problems: List[str] = []
    warnings: List[str] = []
    fixes: List[str] = []
    missing = [i for i in range(config.size) if i not in members]
    joined = sorted(members)
    late: List[str] = []  # said last: the causes are long, the mismatches short
    if missing:
        names = ", ".join(member_name(i, None) for i in missing)
        late.append(
            f"{len(missing)} of {config.size} members never joined within {waited_s:.0f} s: "
            f"{names}; {missing_causes(config)}"
        )
        fixes.append(
            f"find why {names} did not start its check (kubectl describe pod), and allow TCP "
            f"{config.port} between the group's pods"
        )
    problems.extend(duplicates)
    failed, failed_fixes = _failed_members(members, joined)
    problems += failed
    fixes += failed_fixes
    mismatches = _args_mismatches(members, joined)
    if mismatches is not None:
        problems += mismatches
        if any(p for p in problems if "engine arguments" in p):
            fixes.append("give every pod of the group the same vLLM engine arguments")
    shared, shared_fixes = _shared_gpus(members, joined)
    problems += shared
    fixes += shared_fixes
    warnings += _differences(members, joined)
    if warnings and not fixes:
        fixes.append("run the group on nodes with the same driver and the same image")
    uncompared, uncompared_fixes = _uncompared(members, joined)
    warnings += uncompared
    fixes += uncompared_fixes
    slowest = _slowest(members)
    evidence: Dict[str, Any] = {
        "group": config.group_id,
        "kind": config.kind,
        "size": config.size,
        "joined": joined,
        "missing": missing,
        "waited_ms": round(waited_s * 1000.0, 1),
        "members": [_summary(i, members[i]) for i in joined][:16],
        # every member counted, but the leader itself: index/uid/address it connected from
        "roster": [roster_entry(i, members[i]) for i in joined if i != 0][:ROSTER_MAX],
    }
    if slowest is not None:
        evidence["slowest"] = slowest
    if rejected:
        evidence["rejected"] = list(rejected)[:16]  # groupnet.Notes: 8 and a count
    if uncompared:
        evidence["args_not_compared"] = [
            i for i in joined if members[i].get("args_from") in _UNCOMPARED
        ]
    problems += late
    if problems:
        status = "fail"
        message = "; ".join(problems + warnings)
    elif warnings:
        status = "warn"
        message = "; ".join(warnings)
    else:
        status = "pass"
        message = f"all {config.size} members of group {config.group_id!r} joined and agree" + (
            f" (slowest: {slowest['member']}, {slowest['local_ms']:.0f} ms)" if slowest else ""
        )
    return GroupVerdict(status, message[:3000], "; ".join(dict.fromkeys(fixes)), evidence)


_Members = Mapping[int, Mapping[str, Any]]


def _failed_members(members: _Members, joined: List[int]) -> Tuple[List[str], List[str]]:
    """(problems, fixes) for the members whose own checks failed."""
    problems: List[str] = []
    fixes: List[str] = []
    for index in joined:
        facts = members[index]
        if facts.get("verdict") == "fail":
            failed = ", ".join(facts.get("failed") or []) or "see its own report"
            problems.append(f"{member_name(index, facts)} failed its own checks: {failed}")
            fixes.append(f"fix what {member_name(index, facts)}'s own report names")
    return problems, fixes


def _args_mismatches(members: _Members, joined: List[int]) -> Optional[List[str]]:
    """_Members whose engine arguments differ from the first that sent any (None: none did)."""
    base_index = next((i for i in joined if members[i].get("args")), None)
    if base_index is None:
        return None
    base = members[base_index]
    problems: List[str] = []
    for index in joined:
        facts = members[index]
        if not facts.get("args") or facts.get("args_hash") == base.get("args_hash"):
            continue
        diff = _diff(base.get("args", {}), facts.get("args", {}))
        problems.append(
            f"{member_name(index, facts)} runs vLLM with other engine arguments than "
            f"{member_name(base_index, base)}: {diff}"
        )
    return problems


_UNCOMPARED = (ARGS_FROM_NONE, ARGS_FROM_LEGACY)


def _uncompared(members: _Members, joined: List[int]) -> Tuple[List[str], List[str]]:
    """(warnings, fixes) for the members whose engine arguments were not compared: unknown
    is a warning, never a failure. Only where a comparison was possible: two members or more
    run vLLM (a Ray group has one vLLM, its head; its workers run none and are not named)."""
    warnings: List[str] = []
    fixes: List[str] = []
    running = [i for i in joined if members[i].get("args_from") not in (None, ARGS_FROM_RAY_WORKER)]
    if len(running) < 2:
        return warnings, fixes
    for kind, why, fix in (
        (
            ARGS_FROM_NONE,
            "the operator could not read the vLLM command line exactly (no "
            "PREFLIGHT_VLLM_ARGS: a command substitution, a --config file or a line over "
            "16 KiB)",
            "to have the engine arguments compared, write them on the vLLM command line "
            "(literal values or $(VAR) references)",
        ),
        (
            ARGS_FROM_LEGACY,
            "the pod was injected by an older vllm-preflight operator (its "
            "PREFLIGHT_GROUP_ARGS is no longer read)",
            "recreate the group's pods (a rollout) to have their engine arguments compared",
        ),
    ):
        named = [member_name(i, members[i]) for i in joined if members[i].get("args_from") == kind]
        if named:
            warnings.append(f"engine arguments not compared for {', '.join(named)}: {why}")
            fixes.append(fix)
    return warnings, fixes


def _shared_gpus(members: _Members, joined: List[int]) -> Tuple[List[str], List[str]]:
    """(problems, fixes) for a GPU two members on one node both see."""
    problems: List[str] = []
    fixes: List[str] = []
    owners: Dict[Tuple[str, str], int] = {}
    for index in joined:
        where = str(members[index].get("node") or members[index].get("host") or "")
        for uuid in members[index].get("gpu_uuids") or []:
            # NCCL's duplicate test is per host (host hash and bus id): two pods on
            # one node handed the same GPU (time-slicing, a shared GPU)
            key = (where, uuid)
            if key in owners and owners[key] != index:
                problems.append(
                    f"GPU {uuid} is seen by both {member_name(owners[key], members[owners[key]])}"
                    f" and {member_name(index, members[index])}: NCCL fails with 'Duplicate GPU "
                    "detected'"
                )
                fixes.append(
                    "give each pod of the group its own GPUs (no shared or "
                    "time-sliced GPUs across the group)"
                )
            owners.setdefault(key, index)
    return problems, fixes


def _differences(members: _Members, joined: List[int]) -> List[str]:
    """Warnings: driver, CUDA, library, image or GPU model that differ across the group, each
    naming every member with its value."""
    warnings: List[str] = []
    for name, label in (
        ("driver", "NVIDIA driver"),
        ("cuda_driver", "CUDA driver version"),
        ("cuda_runtime", "the image's CUDA runtime"),
        ("nccl", "NCCL"),
        ("vllm", "vLLM"),
        ("torch", "torch"),
        # the reference as written: a tag and a digest of one image differ here, so a warning
        ("image", "the vLLM image"),
    ):
        seen: Dict[str, int] = {}  # value -> the first member with it (the leader first)
        for i in joined:
            if members[i].get(name) not in (None, ""):
                seen.setdefault(str(members[i][name]), i)
        if len(seen) > 1:
            parts = ", ".join(
                f"{member_name(i, members[i])} {value}" for value, i in sorted(seen.items())
            )
            warnings.append(f"{label} differs across the group: {parts}")
    models: Dict[str, int] = {}
    for i in joined:
        if members[i].get("gpu_names"):
            models.setdefault("/".join(sorted(set(members[i]["gpu_names"]))), i)
    if len(models) > 1:
        warnings.append(
            "GPU models differ across the group: "
            + ", ".join(f"{member_name(i, members[i])} {n}" for n, i in sorted(models.items()))
            + " (every rank waits for the slowest)"
        )
    return warnings


def _diff(base: Mapping[str, str], other: Mapping[str, str]) -> str:
    keys = [k for k in ENGINE_KEYS if base.get(k) != other.get(k)]
    return ", ".join(
        f"{k} {base.get(k, '(default)')} vs {other.get(k, '(default)')}" for k in keys[:8]
    )


def _slowest(members: Mapping[int, Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
    timed = [(m.get("local_ms"), i) for i, m in members.items() if m.get("local_ms") is not None]
    if not timed:
        return None
    local_ms, index = max(timed)
    return {"index": index, "member": member_name(index, members[index]), "local_ms": local_ms}


def _summary(index: int, facts: Mapping[str, Any]) -> Dict[str, Any]:
    out: Dict[str, Any] = {"index": index}
    for key in (
        "node",
        "pod",
        "uid",
        "peer_ip",
        "gpu_count",
        "driver",
        "nccl",
        "vllm",
        "args_hash",
        "verdict",
        "local_ms",
    ):
        if facts.get(key) not in (None, ""):
            out[key] = facts[key]
    return out


def roster_entry(index: int, facts: Mapping[str, Any]) -> str:
    """``index/uid/peer address`` of a counted member ("?" for what it did not present):
    the claim the operator checks against the API server. The uid is the member's word;
    the address is what the leader's socket saw, which the member cannot choose."""
    return f"{index}/{facts.get('uid') or '?'}/{facts.get('peer_ip') or '?'}"


def member_outcome_unreachable(
    config: GroupConfig, waited_s: float, last_error: str
) -> GroupVerdict:
    """A member that never reached its leader (or never got its verdict)."""
    return GroupVerdict(
        "fail",
        f"{member_name(config.index, None)} could not reach the group's leader at "
        f"{config.address}:{config.port} within {waited_s:.0f} s (last error: {last_error}); "
        + missing_causes(config).replace("the pod is", "the leader pod is", 1),
        f"check the leader pod of group {config.group_id!r} (kubectl describe pod), and allow "
        f"TCP {config.port} between the group's pods",
        {
            "group": config.group_id,
            "kind": config.kind,
            "size": config.size,
            "index": config.index,
            "leader": f"{config.address}:{config.port}",
            "last_error": last_error[:300],
            "waited_ms": round(waited_s * 1000.0, 1),
        },
    )
