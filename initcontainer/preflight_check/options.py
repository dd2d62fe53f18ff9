"""Command-line options and environment of `vllm-preflight check`, validated.

Every malformed input becomes a UsageError whose message names the input as the user
wrote it (the flag or the environment variable, and its value) and says what would be
accepted. The CLI turns it into exit code 2 with the report still written.
"""

from __future__ import annotations

import argparse
import re
import shlex
from dataclasses import dataclass, field, replace
from typing import (
    Any,
    Callable,
    Dict,
    FrozenSet,
    List,
    Mapping,
    NoReturn,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
)

from preflight_check import __version__
from preflight_check.group import GroupConfig, GroupError, group_config
from preflight_check.plan import Plan
from preflight_contract import actions, envnames
from preflight_contract.actions import ACTIONS, ENFORCE
from preflight_contract.check_ids import CHECKS, DEEP, FAST, tier_of
from preflight_contract.reuse import Offer

GIB = 1 << 30
# No node has more GPUs than this; a larger number is a typo, not a plan.
MAX_GPUS_PER_POD = 1024
DEFAULT_TERMINATION_LOG = "/dev/termination-log"
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_DEEP_TIMEOUT_S = 180.0

_QUANTITY = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?)\s*([A-Za-z]*)\s*$")
# Kubernetes' own suffixes, case as written (a PreflightPolicy's shmMin is a quantity)
_K8S_UNITS: Dict[str, int] = {
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 1 << 10,
    "Mi": 1 << 20,
    "Gi": 1 << 30,
    "Ti": 1 << 40,
    "Pi": 1 << 50,
    "Ei": 1 << 60,
}
MAX_SIZE = (1 << 63) - 1  # the largest quantity Kubernetes stores
_UNITS: Dict[str, int] = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "m": 10**6,
    "mb": 10**6,
    "g": 10**9,
    "gb": 10**9,
    "t": 10**12,
    "tb": 10**12,
    "ki": 1 << 10,
    "kib": 1 << 10,
    "mi": 1 << 20,
    "mib": 1 << 20,
    "gi": 1 << 30,
    "gib": 1 << 30,
    "ti": 1 << 40,
    "tib": 1 << 40,
}


class UsageError(Exception):
    """The command line or environment is malformed; the message names the input."""


def env_fix(env_name: str) -> str:
    """How to fix a bad PREFLIGHT_* value: where it comes from."""
    origin = envnames.ORIGIN.get(env_name, "the pod's env")
    return (
        f"{env_name} is set in the preflight-check container's env from {origin}: correct "
        "it there (then the pods are re-created with the fixed value)"
    )


@dataclass
class Options:
    plan: Plan = field(default_factory=Plan)
    action: str = ENFORCE
    tier: str = FAST
    shm_min: int = GIB
    gpu_memory_utilization: float = 0.9
    skip: FrozenSet[str] = frozenset()
    timeout_s: float = DEFAULT_TIMEOUT_S
    deep_timeout_s: float = DEFAULT_DEEP_TIMEOUT_S
    # The whole check's budget: no wait outlives it (children still running are stopped
    # and reported as timed out), so an init container never sits out its pod's start.
    deadline_s: Optional[float] = None
    json_path: Optional[str] = None
    termination_log: str = DEFAULT_TERMINATION_LOG
    termination_log_given: bool = False
    list_checks: bool = False
    # What vLLM would object to in --vllm-args beyond the plan (shown by the 'plan' check).
    plan_notes: List[str] = field(default_factory=list)
    # The model and the options the model checks read, from --vllm-args (model, dp,
    # max_model_len, dtype, quantization, enable_expert_parallel); empty without a model.
    model_args: Dict[str, Any] = field(default_factory=dict)
    # Where each setting came from, for the report ("--shm-min", "PREFLIGHT_SHM_MIN").
    sources: Dict[str, str] = field(default_factory=dict)
    # The multi-node group this pod belongs to (preflight_check.group), None when alone.
    group: Optional[GroupConfig] = None
    # PREFLIGHT_* values that could not be read under Warn/Audit: (variable, what is wrong).
    # Their defaults were used; the 'settings' check reports them.
    setting_problems: List[Tuple[str, str]] = field(default_factory=list)
    # Verdict reuse (preflight_check/reuse.py): the offers, this node, a problem with them.
    reuse_offers: List[Offer] = field(default_factory=list)
    node_name: str = ""
    reuse_problem: str = ""

    def enabled(self, check_id: str) -> bool:
        if check_id in self.skip:
            return False
        return tier_of(check_id) == FAST or self.tier == DEEP


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="vllm-preflight check",
        # No abbreviations: a typo must not silently become another flag.
        allow_abbrev=False,
        description=(
            "Validate this host's (or pod's) GPU view for a vLLM parallel plan before vLLM "
            "starts. Exit codes: 0 pass (or not enforced), 1 failed under --action Enforce, "
            "2 usage or internal error."
        ),
    )
    plan = parser.add_argument_group("the plan (flags win over --vllm-args, which win over env)")
    plan.add_argument("--tp", metavar="N", help="tensor-parallel size (env PREFLIGHT_TP)")
    plan.add_argument("--pp", metavar="N", help="pipeline-parallel size (env PREFLIGHT_PP)")
    plan.add_argument(
        "--dp-local", metavar="N", help="data-parallel ranks in this pod (env PREFLIGHT_DP_LOCAL)"
    )
    plan.add_argument(
        "--vllm-args",
        metavar="CMDLINE",
        help="the vLLM command line, read with vLLM's spellings (env PREFLIGHT_VLLM_ARGS)",
    )
    behaviour = parser.add_argument_group("behaviour")
    behaviour.add_argument(
        "--action", help="Enforce (default) | Warn | Audit (env PREFLIGHT_ACTION)"
    )
    behaviour.add_argument("--tier", choices=[FAST, DEEP], help="fast (default) or deep")
    behaviour.add_argument("--deep", action="store_true", help="same as --tier deep (needs torch)")
    behaviour.add_argument(
        "--shm-min",
        metavar="SIZE",
        help="smallest /dev/shm for TP x PP > 1, e.g. 1Gi (default; env PREFLIGHT_SHM_MIN)",
    )
    behaviour.add_argument(
        "--gpu-memory-utilization",
        metavar="F",
        help=(
            "vLLM's --gpu-memory-utilization (default 0.9): vLLM claims this fraction of each "
            "GPU's memory at start-up, so memory other processes already use must fit in the "
            "rest (env PREFLIGHT_GPU_MEMORY_UTILIZATION)"
        ),
    )
    behaviour.add_argument(
        "--skip",
        metavar="ID",
        action="append",
        default=[],
        help="turn a check off (repeat or comma-separate; env PREFLIGHT_SKIP); see --list-checks",
    )
    behaviour.add_argument(
        "--timeout", metavar="S", help=f"per-rank probe timeout (default {DEFAULT_TIMEOUT_S:g})"
    )
    behaviour.add_argument(
        "--deep-timeout",
        metavar="S",
        help=f"per-worker timeout of the deep tier (default {DEFAULT_DEEP_TIMEOUT_S:g})",
    )
    behaviour.add_argument(
        "--deadline",
        metavar="S",
        help="the whole check's time budget; probes still running then fail as timed out "
        "(env PREFLIGHT_DEADLINE; the injector sets it from injection.timeoutSeconds)",
    )
    output = parser.add_argument_group("output")
    output.add_argument("--json", metavar="PATH", help="write the full JSON report ('-' = stdout)")
    output.add_argument(
        "--termination-log",
        metavar="PATH",
        help=(
            f"compact report for Kubernetes (default {DEFAULT_TERMINATION_LOG}, written when "
            "it exists, as it does in a container)"
        ),
    )
    output.add_argument("--list-checks", action="store_true", help="list check ids and exit")
    output.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def parse_count(text: str, where: str) -> int:
    """A GPU count as written by the user: digits, at least 1, at most MAX_GPUS_PER_POD."""
    value = text.strip()
    if not re.fullmatch(r"[+-]?[0-9]+", value):
        raise UsageError(f"{where}={_shown(text)} is not a whole number (write digits, e.g. 4)")
    if len(value.lstrip("+-").lstrip("0")) > 6:  # never int() of thousands of digits
        raise UsageError(f"{where}={_shown(text)} is more than {MAX_GPUS_PER_POD} GPUs per pod")
    number = int(value)
    if number < 1:
        raise UsageError(f"{where}={_shown(text)} must be at least 1")
    if number > MAX_GPUS_PER_POD:
        raise UsageError(f"{where}={_shown(text)} is more than {MAX_GPUS_PER_POD} GPUs per pod")
    return number


def _shown(text: str, limit: int = 40) -> str:
    """The value as the user wrote it, shortened: a message never carries 5,000 digits."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[: limit // 2]!r}...({len(text)} characters)"


def _short(text: str, limit: int = 200) -> str:
    """A message of vLLM's parser, which may quote a hostile value whole, kept short."""
    return text if len(text) <= limit else text[: limit - 25] + f"...({len(text)} characters)"


def parse_size(text: str, where: str) -> int:
    """A size in bytes: a Kubernetes quantity (1Gi, 512Mi, 2G, 1Pi, 1E, 1073741824), or the
    familiar 1GiB / 512mb spellings. Exact (no float), at most 2^63-1 as Kubernetes stores."""
    match = _QUANTITY.match(text)
    if match and match.group(2) in _K8S_UNITS:
        unit = _K8S_UNITS[match.group(2)]
    elif match and match.group(2).lower() in _UNITS:
        unit = _UNITS[match.group(2).lower()]
    else:
        raise UsageError(
            f"{where}={_shown(text)} is not a size (write e.g. 1Gi, 512Mi or 1073741824)"
        )
    whole, _, fraction = match.group(1).partition(".")
    whole, fraction = whole.lstrip("0") or "0", fraction[:30]  # bytes need no more digits
    if len(whole) > 20:  # never int() of hundreds of digits: no size is that large
        raise UsageError(f"{where}={_shown(text)} is larger than any size Kubernetes stores (8Ei)")
    scale: int = 10 ** len(fraction)
    size: int = (int(whole) * scale + int(fraction or "0")) * unit // scale
    if size > MAX_SIZE:
        raise UsageError(f"{where}={_shown(text)} is larger than any size Kubernetes stores (8Ei)")
    return size


def parse_fraction(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError(
            f"{where}={_shown(text)} is not a number between 0 and 1 (e.g. 0.9)"
        ) from None
    if not 0.0 < value <= 1.0:
        raise UsageError(f"{where}={_shown(text)} must be above 0 and at most 1 (e.g. 0.9)")
    return value


def parse_seconds(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{where}={_shown(text)} is not a number of seconds") from None
    if not 0.0 < value <= 3600.0:
        raise UsageError(f"{where}={_shown(text)} must be above 0 and at most 3600 seconds")
    return value


def parse_action(text: str, where: str) -> str:
    action = actions.parse_action(text)
    if action is not None:
        return action
    raise UsageError(f"{where}={_shown(text)} is not one of {', '.join(ACTIONS)}")


def _pick(
    flag_value: Optional[str], flag: str, environ: Mapping[str, str], env_name: str
) -> Tuple[Optional[str], str]:
    if flag_value is not None:
        return flag_value, flag
    if env_name in environ:
        return environ[env_name], env_name
    return None, ""


def _load_config_file(path: str) -> Mapping[str, object]:
    """vLLM's --config YAML: PyYAML when the image has it, else flat `key: value` lines."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    try:
        # Optional: vLLM images ship PyYAML, the checker must not require it.
        import yaml  # noqa: PLC0415
    except ImportError:
        return _flat_yaml(text)
    loaded = yaml.safe_load(text)
    return loaded if isinstance(loaded, dict) else {}


def _flat_yaml(text: str) -> Dict[str, object]:
    """The subset of YAML that vLLM config files use: top-level `key: value` lines."""
    out: Dict[str, object] = {}
    for raw_line in text.splitlines():
        line = raw_line.split("#", 1)[0].rstrip()
        if ":" in line and not line.startswith((" ", "\t", "-")):
            key, _, value = line.partition(":")
            out[key.strip()] = value.strip().strip("'\"")
    return out


_KUBELET_REFERENCE = re.compile(r"\$\$|\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)")


def vllm_argv(text: str, where: str, environ: Optional[Mapping[str, str]] = None) -> List[str]:
    """The words of a vLLM command line. With PREFLIGHT_VLLM_ARGS_DEFERRED in ``environ``
    (the injector wrote the line for two rounds of expansion: injection.vllm_args_value
    says why) each word is expanded after the split, as the kubelet expands an env value:
    ``$$`` is ``$``, ``$(NAME)`` of a deferred name is its value when set; so a value that
    holds quotes, spaces or newlines stays inside its word, as vLLM gets it."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"{where}={_shown(text)} is not a valid command line: {exc}") from None
    deferred_text = (environ or {}).get(envnames.VLLM_ARGS_DEFERRED)
    if deferred_text is None or where != envnames.VLLM_ARGS:
        return words
    assert environ is not None
    deferred = {n.strip() for n in deferred_text.split(",") if n.strip()}

    def expand(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "$"
        return environ[name] if name in deferred and name in environ else match.group(0)

    return [_KUBELET_REFERENCE.sub(expand, word) for word in words]


def plan_from_vllm_args(
    text: str, where: str, environ: Optional[Mapping[str, str]] = None
) -> Tuple[Dict[str, int], Dict[str, Any]]:
    """The plan numbers and other settings read from a vLLM command line.

    Returns ({tp, pp, dp_local, dcp, pcp, nodes}, {gpu_memory_utilization?, notes?}).
    Anything vLLM would refuse about the plan is a usage error naming the flag as
    written; vLLM's other objections are kept as notes for the 'plan' check.
    """
    try:
        # Imported only for --vllm-args, so a build without it still runs --tp/--pp.
        from preflight_contract import vllm_args  # noqa: PLC0415
    except ImportError:
        raise UsageError(
            f"{where} needs the vLLM argument parser (preflight_contract.vllm_args), which this "
            "build lacks; give --tp/--pp/--dp-local instead"
        ) from None
    argv = vllm_argv(text, where, environ)
    parsed = vllm_args.parse_vllm_args(argv, load_config=_load_config_file)
    plan_problems = [p for p in parsed.problems if p.dest in vllm_args.PLAN_DESTS or not p.dest]
    if plan_problems:
        described = "; ".join(
            f"{p.flag} {_shown(str(p.value))}: {_short(p.message)}" if p.flag else _short(p.message)
            for p in plan_problems
        )
        raise UsageError(f"{where}: {described}")
    plan = parsed.plan
    numbers = {
        "tp": plan.tp,
        "pp": plan.pp,
        "dp_local": plan.dp_local,
        "dcp": plan.dcp,
        "pcp": plan.pcp,
        "nodes": plan.nodes_per_replica,
    }
    extra: Dict[str, Any] = {}
    if parsed.gpu_memory_utilization is not None:
        extra["gpu_memory_utilization"] = parsed.gpu_memory_utilization
    if parsed.model:
        extra["model_args"] = {
            "model": parsed.model,
            "dp": plan.dp,
            "max_model_len": parsed.max_model_len,
            "dtype": parsed.dtype,
            "quantization": parsed.quantization,
            "enable_expert_parallel": parsed.enable_expert_parallel,
            "hf_overrides": parsed.hf_overrides,
            "revision": parsed.revision,
            "download_dir": parsed.download_dir,
            "tokenizer": parsed.tokenizer,
            "load_format": parsed.load_format,
            "trust_remote_code": parsed.trust_remote_code,
            "cpu_offload_gb": parsed.cpu_offload_gb,
            "kv_cache_memory_bytes": parsed.kv_cache_memory_bytes,
        }
    notes = [
        f"{p.flag} {_shown(str(p.value))}: {_short(p.message)}"
        for p in parsed.problems
        if p not in plan_problems
    ]
    notes += [f"{p.flag}: {p.message}" for p in parsed.warnings]
    if notes:
        extra["notes"] = notes
    return numbers, extra


def parse_options(argv: Sequence[str], environ: Mapping[str, str]) -> Options:
    args = build_parser().parse_args(list(argv))
    options = Options()
    options.list_checks = bool(args.list_checks)
    # The action first: under Warn/Audit a PREFLIGHT_* value the check cannot read must not
    # block the pod (issue 19): its default is used and the 'settings' check reports it.
    _read_action(args, environ, options)
    env = _EnvReader(environ, options)
    vllm_text, vllm_where = _pick(args.vllm_args, "--vllm-args", environ, envnames.VLLM_ARGS)
    unknown = _plan_unknown(args, environ)
    if unknown:
        from_vllm, extra, argv_read = _recover_plan(vllm_text, vllm_where, environ, options)
        options.plan = _unknown_or_recovered(unknown, from_vllm, vllm_where, extra)
    else:
        from_vllm, extra, argv_read = _read_vllm_args(vllm_text, vllm_where, env, options)
        options.plan = _read_plan(args, environ, env, vllm_where, from_vllm)
    _read_tier(args, environ, env, options)
    _read_shm_min(args, environ, env, options)
    _read_gpu_memory_utilization(args, environ, env, options, (vllm_where, extra))
    options.skip = _read_skip(args, environ, env)
    _read_timeouts(args, environ, env, options)
    if options.tier == DEEP:
        from preflight_check.reuse import read_offers  # noqa: PLC0415 - the deep tier only

        options.reuse_offers, options.node_name, options.reuse_problem = read_offers(environ)
    try:
        options.group = group_config(environ, argv_read)
    except GroupError as exc:
        # PREFLIGHT_GROUP_* come from the injector: under Warn/Audit a warning, no group
        env.problem(envnames.GROUP_ID, UsageError(f"group settings: {exc}"))
    options.json_path = args.json
    if args.termination_log is not None:
        options.termination_log, options.termination_log_given = args.termination_log, True
    return options


def _read_action(args: argparse.Namespace, environ: Mapping[str, str], options: Options) -> None:
    """--action / PREFLIGHT_ACTION: always strict, it decides how the rest is read."""
    value, where = _pick(args.action, "--action", environ, envnames.ACTION)
    if value is not None:
        try:
            options.action, options.sources["action"] = parse_action(value, where), where
        except UsageError as exc:
            raise UsageError(_with_fix(exc, where)) from None


def _read_vllm_args(
    vllm_text: Optional[str], vllm_where: str, env: _EnvReader, options: Options
) -> Tuple[Dict[str, int], Dict[str, Any], List[str]]:
    """The plan numbers, the extra facts (model, notes) and the words of --vllm-args or
    PREFLIGHT_VLLM_ARGS, if given; a PREFLIGHT_VLLM_ARGS that cannot be read is a warning
    under Warn/Audit (no words, the plan from PREFLIGHT_TP/PP/DP_LOCAL)."""
    from_vllm: Dict[str, int] = {}
    extra: Dict[str, Any] = {}
    argv: List[str] = []
    if vllm_text is not None and vllm_where == envnames.VLLM_ARGS:
        environ = env.environ
        found = env.read(vllm_where, lambda t, w: plan_from_vllm_args(t, w, environ), None)
        if found is not None:
            from_vllm, extra = found
            argv = vllm_argv(vllm_text, vllm_where, environ)
    elif vllm_text is not None:
        from_vllm, extra = plan_from_vllm_args(vllm_text, vllm_where)
        argv = vllm_argv(vllm_text, vllm_where)
    if vllm_text is not None:
        options.plan_notes = list(extra.get("notes", []))
        options.model_args = dict(extra.get("model_args", {}))
    return from_vllm, extra, argv


MAX_PLAN_UNKNOWN_CHARS = 300


def _plan_unknown(args: argparse.Namespace, environ: Mapping[str, str]) -> str:
    """Why the plan is unknown (PREFLIGHT_PLAN_UNKNOWN, one printable line, bounded), or ""
    when it is not, or when a flag gives the plan (--tp/--pp/--dp-local/--vllm-args win)."""
    if any(getattr(args, key) is not None for key in ("tp", "pp", "dp_local", "vllm_args")):
        return ""
    if envnames.PLAN_UNKNOWN not in environ:
        return ""
    text = "".join(c if c.isprintable() else " " for c in environ[envnames.PLAN_UNKNOWN])
    line = " ".join(text.split()) or "the injector could not read the vLLM command line"
    if len(line) > MAX_PLAN_UNKNOWN_CHARS:
        line = line[: MAX_PLAN_UNKNOWN_CHARS - 1] + "\u2026"
    return line


def _recover_plan(
    vllm_text: Optional[str], vllm_where: str, environ: Mapping[str, str], options: Options
) -> Tuple[Dict[str, int], Dict[str, Any], List[str]]:
    """The plan from PREFLIGHT_VLLM_ARGS as the kubelet filled it in (a size the rules could
    not know, from a Secret or the downward API, is known now), when it reads; otherwise
    nothing, never an error, under any action: a check that cannot read the plan of a pod
    whose plan nobody could read validates the rest and says so (plan unknown). A value
    PREFLIGHT_TP/PP/DP_LOCAL (copied by envFrom) is not a plan the rules read: ignored."""
    if vllm_text is None:
        return {}, {}, []
    try:
        from_vllm, extra = plan_from_vllm_args(vllm_text, vllm_where, environ)
        argv = vllm_argv(vllm_text, vllm_where, environ)
    except UsageError as exc:
        return {}, {"unread": str(exc)}, []
    try:
        plan = _plan_of(from_vllm, vllm_where)
    except UsageError as exc:
        return {}, {"unread": str(exc)}, []
    options.plan_notes = list(extra.get("notes", []))
    options.model_args = dict(extra.get("model_args", {}))
    extra["plan"] = plan
    return from_vllm, extra, argv


def _plan_of(from_vllm: Dict[str, int], where: str) -> Plan:
    numbers = {key: parse_count(str(from_vllm[key]), f"{where} ({key})") for key in
               ("tp", "pp", "dp_local")}  # fmt: skip
    plan = Plan(
        tp=numbers["tp"],
        pp=numbers["pp"],
        dp_local=numbers["dp_local"],
        dcp=from_vllm.get("dcp", 1),
        pcp=from_vllm.get("pcp", 1),
        nnodes=from_vllm.get("nodes", 1),
    )
    total = plan.tp * plan.pp * plan.pcp * plan.dp_local
    if total > MAX_GPUS_PER_POD:
        raise UsageError(f"{where}: {total} GPUs is more than {MAX_GPUS_PER_POD} per pod")
    return plan


def _unknown_or_recovered(
    unknown: str, from_vllm: Dict[str, int], vllm_where: str, extra: Dict[str, Any]
) -> Plan:
    recovered = extra.get("plan")
    if isinstance(recovered, Plan):
        source = f"{vllm_where} as the kubelet filled it in (recovered at runtime)"
        return replace(recovered, source=source, recovered=unknown)
    why = unknown
    if extra.get("unread"):
        why += f"; {vllm_where} did not give it either: {_short(str(extra['unread']))}"
    return Plan(unknown=why, source=f"unknown ({envnames.PLAN_UNKNOWN})")


def _read_plan(
    args: argparse.Namespace,
    environ: Mapping[str, str],
    env: _EnvReader,
    vllm_where: str,
    from_vllm: Dict[str, int],
) -> Plan:
    """TP, PP and DP-local from their flag, else --vllm-args, else PREFLIGHT_*."""
    numbers: Dict[str, int] = {"tp": 1, "pp": 1, "dp_local": 1, "dcp": 1, "pcp": 1, "nodes": 1}
    plan_sources: List[str] = []
    for key, flag, env_name in (
        ("tp", "--tp", envnames.TP),
        ("pp", "--pp", envnames.PP),
        ("dp_local", "--dp-local", envnames.DP_LOCAL),
    ):
        flag_value = getattr(args, key)
        if flag_value is not None:
            numbers[key] = parse_count(flag_value, flag)
            plan_sources.append(flag)
        elif key in from_vllm:
            numbers[key] = parse_count(str(from_vllm[key]), f"{vllm_where} ({key})")
            if vllm_where not in plan_sources:
                plan_sources.append(vllm_where)
        elif env_name in environ:
            number = env.read(env_name, parse_count, None)
            if number is not None:
                numbers[key] = number
                plan_sources.append(env_name)
    for key in ("dcp", "pcp", "nodes"):
        numbers[key] = from_vllm.get(key, 1)
    total = numbers["tp"] * numbers["pp"] * numbers["pcp"] * numbers["dp_local"]
    if total > MAX_GPUS_PER_POD:
        raise UsageError(
            f"TP {numbers['tp']} x PP {numbers['pp']} x DP-local {numbers['dp_local']} = {total} "
            f"GPUs is more than {MAX_GPUS_PER_POD} per pod (a typo?)"
        )
    return Plan(
        tp=numbers["tp"],
        pp=numbers["pp"],
        dp_local=numbers["dp_local"],
        dcp=numbers["dcp"],
        pcp=numbers["pcp"],
        nnodes=numbers["nodes"],
        source=" + ".join(plan_sources) if plan_sources else "default (no plan given: 1 GPU)",
    )


def _read_tier(
    args: argparse.Namespace, environ: Mapping[str, str], env: _EnvReader, options: Options
) -> None:
    tier_env = environ.get(envnames.TIER)
    sources = options.sources
    if args.deep:
        options.tier, sources["tier"] = DEEP, "--deep"
    elif args.tier:
        options.tier, sources["tier"] = args.tier, "--tier"
    elif tier_env:
        tier = env.read(envnames.TIER, _parse_tier, None)
        if tier is not None:
            options.tier, sources["tier"] = tier, envnames.TIER


def _read_shm_min(
    args: argparse.Namespace, environ: Mapping[str, str], env: _EnvReader, options: Options
) -> None:
    value, where = _pick(args.shm_min, "--shm-min", environ, envnames.SHM_MIN)
    if value is not None:
        size = env.read(where, parse_size, None) if where in environ else None
        if where not in environ:
            size = parse_size(value, where)
        if size is not None:
            options.shm_min, options.sources["shm_min"] = size, where


def _read_gpu_memory_utilization(
    args: argparse.Namespace,
    environ: Mapping[str, str],
    env: _EnvReader,
    options: Options,
    vllm: Tuple[str, Dict[str, Any]],
) -> None:
    """The flag or PREFLIGHT_* first, else the value in --vllm-args (`vllm`: where, extra)."""
    vllm_where, extra = vllm
    value, where = _pick(
        args.gpu_memory_utilization,
        "--gpu-memory-utilization",
        environ,
        envnames.GPU_MEMORY_UTILIZATION,
    )
    fraction = None
    if value is not None and where in environ:
        fraction = env.read(where, parse_fraction, None)
    elif value is not None:
        fraction = parse_fraction(value, where)
    if fraction is not None:
        options.gpu_memory_utilization = fraction
        options.sources["gpu_memory_utilization"] = where
    elif "gpu_memory_utilization" in extra:
        options.gpu_memory_utilization = parse_fraction(
            str(extra["gpu_memory_utilization"]), f"{vllm_where} (--gpu-memory-utilization)"
        )
        options.sources["gpu_memory_utilization"] = vllm_where


def _read_skip(
    args: argparse.Namespace, environ: Mapping[str, str], env: _EnvReader
) -> FrozenSet[str]:
    """--skip (strict) or PREFLIGHT_SKIP (an unknown name is dropped under Warn/Audit)."""
    skip_texts = list(args.skip) or ([environ[envnames.SKIP]] if environ.get(envnames.SKIP) else [])
    skipped = {s.strip() for text in skip_texts for s in text.split(",") if s.strip()}
    unknown = sorted(skipped - set(CHECKS))
    if unknown and args.skip:
        raise UsageError(f"--skip {', '.join(unknown)}: no such check (known: {', '.join(CHECKS)})")
    if unknown:
        env.problem(
            envnames.SKIP,
            UsageError(
                f"PREFLIGHT_SKIP names no such check: {', '.join(unknown)} "
                f"(known: {', '.join(CHECKS)})"
            ),
        )
        skipped -= set(unknown)
    return frozenset(skipped)


def _read_timeouts(
    args: argparse.Namespace, environ: Mapping[str, str], env: _EnvReader, options: Options
) -> None:
    if args.timeout is not None:
        options.timeout_s = parse_seconds(args.timeout, "--timeout")
    if args.deep_timeout is not None:
        options.deep_timeout_s = parse_seconds(args.deep_timeout, "--deep-timeout")
    deadline, where = _pick(args.deadline, "--deadline", environ, envnames.DEADLINE)
    if deadline is not None and where in environ:
        options.deadline_s = env.read(where, parse_seconds, None)
    elif deadline is not None:
        options.deadline_s = parse_seconds(deadline, where)


def _parse_tier(text: str, where: str) -> str:
    if text not in (FAST, DEEP):
        raise UsageError(f"{where}={_shown(text)} is not one of fast, deep")
    return text


def _with_fix(error: UsageError, where: str) -> str:
    message = str(error)
    return f"{message}. {env_fix(where)}" if where.startswith(envnames.PREFIX) else message


T = TypeVar("T")


class _EnvReader:
    """Reads PREFLIGHT_* values: under Enforce a bad one is a usage error naming the
    variable and where it comes from; under Warn/Audit it is recorded (the 'settings'
    check reports it) and the caller's default stands, so the pod still starts."""

    def __init__(self, environ: Mapping[str, str], options: Options) -> None:
        self.environ = environ
        self.options = options

    def read(self, name: str, parse: Callable[[str, str], T], default: Optional[T]) -> Optional[T]:
        try:
            return parse(self.environ[name], name)
        except UsageError as exc:
            self.problem(name, exc)
            return default

    def problem(self, name: str, error: UsageError) -> None:
        if self.options.action == ENFORCE:
            raise UsageError(_with_fix(error, name)) from None
        self.options.setting_problems.append((name, str(error)))


def output_paths(argv: Sequence[str]) -> Tuple[Optional[str], Optional[str]]:
    """--json and --termination-log read leniently, for writing a report after a usage error."""
    json_path: Optional[str] = None
    termination: Optional[str] = None
    items = list(argv)
    for index, item in enumerate(items):
        for flag in ("--json", "--termination-log"):
            value: Optional[str] = None
            if item == flag and index + 1 < len(items):
                value = items[index + 1]
            elif item.startswith(flag + "="):
                value = item[len(flag) + 1 :]
            if value is not None:
                if flag == "--json":
                    json_path = value
                else:
                    termination = value
    return json_path, termination
