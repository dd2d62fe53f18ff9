"""Which GPUs CUDA sees, why, and whether that fits the plan.

The driver's answer is the verdict; ``cvd.explain`` supplies the reason in terms of the
CUDA_VISIBLE_DEVICES entry the user wrote.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from preflight_check.checks.base import (
    check,
    cuda_unavailable,
    gpu_label,
    plural,
    result,
    short_uuid,
    skipped,
)
from preflight_check.cvd import BaseGpu, Explanation, explain, vllm_unparseable
from preflight_check.driver.api import (
    CUDA_ERROR_INVALID_DEVICE,
    CUDA_ERROR_NO_DEVICE,
    bus_id_key,
    uuid_key,
)
from preflight_check.facts import Facts
from preflight_check.options import Options
from preflight_contract.report import CheckResult
from preflight_contract.verdicts import FAIL, PASS, WARN

CVD_FIX = (
    "remove CUDA_VISIBLE_DEVICES from the container's env and let the nvidia.com/gpu limit "
    "choose the GPUs, or list each GPU once by index (e.g. CUDA_VISIBLE_DEVICES=0,1)"
)


def base_gpus(facts: Facts) -> Optional[List[BaseGpu]]:
    """The GPUs CUDA could enumerate before CUDA_VISIBLE_DEVICES, in CUDA's order.

    NVML lists every GPU of the container in PCI order. CUDA uses the same order when
    CUDA_DEVICE_ORDER=PCI_BUS_ID or when the GPUs are identical (measured); otherwise
    its "fastest first" order is not known from NVML.
    """
    if not facts.nvml.available:
        return None
    return [BaseGpu(g.uuid, bus_id_key(g.pci_bus_id), g.name) for g in facts.nvml.gpus]


def _order_known(facts: Facts) -> bool:
    names = {g.name for g in facts.nvml.gpus}
    return facts.env("CUDA_DEVICE_ORDER") == "PCI_BUS_ID" or len(names) <= 1


def _entries_evidence(explanation: Explanation) -> List[Dict[str, object]]:
    out: List[Dict[str, object]] = []
    for entry in explanation.entries:
        item: Dict[str, object] = {"entry": entry.position, "text": entry.text, "kind": entry.kind}
        if entry.gpu is not None:
            item["gpu"] = entry.gpu
        if entry.reason:
            item["reason"] = entry.reason
        out.append(item)
    return out


def _label_base(base: Optional[List[BaseGpu]], index: int) -> str:
    if base is None or index >= len(base):
        return f"GPU {index}"
    return base[index].label(index)


def _duplicate_why(explanation: Explanation, base: Optional[List[BaseGpu]]) -> str:
    """Why cuInit said CUDA_ERROR_INVALID_DEVICE: the two entries naming one GPU."""
    dup = explanation.duplicate
    if dup is None or dup.gpu is None:
        return "it names a GPU twice (the rules could not tell which entries)"
    first = next(e for e in explanation.entries if e.gpu == dup.gpu)
    return (
        f"entries {first.position} ({first.text!r}) and {dup.position} ({dup.text!r}) both "
        f"name {_label_base(base, dup.gpu)}"
    )


def _no_device_why(value: str, explanation: Explanation) -> str:
    """Why cuInit said CUDA_ERROR_NO_DEVICE, in terms of the entries the user wrote."""
    stop = explanation.stopped_at
    if value.strip() == "":
        return "it is set but empty, which hides every GPU"
    if stop is not None and stop.position == 1:
        return (
            f"entry 1 {stop.text!r} names no GPU ({stop.reason}); CUDA ignores it and "
            "every entry after it"
        )
    return "no entry names a GPU CUDA can use"


@check("cuda-visible-devices")
def cuda_visible_devices(facts: Facts, options: Options) -> List[CheckResult]:
    value = facts.env("CUDA_VISIBLE_DEVICES")
    cuda = facts.cuda
    if not cuda.loaded:
        return skipped("cuda-visible-devices", "no NVIDIA driver (see check 'driver')")
    if value is None:
        return result(
            "cuda-visible-devices",
            PASS,
            f"not set: CUDA sees every GPU of the container ({cuda.count})",
        )
    base = base_gpus(facts)
    explanation = explain(value, base)
    evidence: Dict[str, object] = {
        "value": value,
        "entries": _entries_evidence(explanation),
        "cuda_sees": [
            {"ordinal": g.ordinal, "uuid": g.uuid, "pci_bus_id": g.pci_bus_id} for g in cuda.gpus
        ],
    }
    if not _order_known(facts):
        evidence["note"] = (
            "GPU models differ and CUDA_DEVICE_ORDER is unset: index entries were read in PCI order"
        )
    code = cuda.init_code
    if code == CUDA_ERROR_INVALID_DEVICE:
        why = _duplicate_why(explanation, base)
        return result(
            "cuda-visible-devices",
            FAIL,
            f"CUDA_VISIBLE_DEVICES={value!r}: {why}; a duplicate makes cuInit fail with "
            "CUDA_ERROR_INVALID_DEVICE (101) and CUDA sees no GPU at all",
            CVD_FIX,
            **evidence,
        )
    if code == CUDA_ERROR_NO_DEVICE:
        why = _no_device_why(value, explanation)
        return result(
            "cuda-visible-devices",
            FAIL,
            f"CUDA_VISIBLE_DEVICES={value!r}: {why}, so cuInit fails with CUDA_ERROR_NO_DEVICE "
            "(100) and CUDA sees no GPU",
            CVD_FIX,
            **evidence,
        )
    if not cuda.initialised:
        return skipped(
            "cuda-visible-devices", f"cuInit failed ({cuda.init_name}); see check 'driver'"
        )
    seen = ", ".join(gpu_label(g) for g in cuda.gpus) or "none"
    predicted = [uuid_key(base[i].uuid) for i in explanation.predicted_visible] if base else []
    actual = [uuid_key(g.uuid) for g in cuda.gpus]
    differs = bool(base) and not explanation.uncertain and predicted != actual
    if differs:
        evidence["rules_predicted"] = (
            [base[i].uuid for i in explanation.predicted_visible] if base else []
        )
    stop = explanation.stopped_at
    if stop is not None:
        lost = explanation.lost_gpus()
        lost_text = ", ".join(_label_base(base, i) for i in lost) if lost else "no further GPU"
        short = cuda.count < facts.plan.gpus_needed
        return result(
            "cuda-visible-devices",
            FAIL if short else WARN,
            f"CUDA_VISIBLE_DEVICES={value!r}: entry {stop.position} {stop.text!r} names no GPU "
            f"({stop.reason}); CUDA silently ignores it and every entry after it, so "
            f"{lost_text} {'is' if len(lost) == 1 else 'are'} lost. "
            f"CUDA sees {plural(cuda.count, 'GPU')}: {seen}",
            CVD_FIX,
            **evidence,
        )
    entries = len(explanation.entries)
    if cuda.count < entries:
        return result(
            "cuda-visible-devices",
            FAIL if cuda.count < facts.plan.gpus_needed else WARN,
            f"CUDA_VISIBLE_DEVICES={value!r} lists {entries} entries but CUDA sees "
            f"{plural(cuda.count, 'GPU')} ({seen}); the measured rules do not explain why",
            CVD_FIX,
            **evidence,
        )
    mapping = "; ".join(
        f"CUDA ordinal {g.ordinal} = {short_uuid(g.uuid)} (bus {g.pci_bus_id}"
        + (f", nvidia-smi GPU {n.index})" if (n := facts.nvml.by_uuid(g.uuid)) else ")")
        for g in cuda.gpus
    )
    note = " (differs from the rules' prediction: the driver's answer stands)" if differs else ""
    return result(
        "cuda-visible-devices", PASS, f"CUDA_VISIBLE_DEVICES={value!r}: {mapping}{note}", **evidence
    )


@check("vllm-device-ids")
def vllm_device_ids(facts: Facts, options: Options) -> List[CheckResult]:
    value = facts.env("CUDA_VISIBLE_DEVICES")
    if value is None:
        return result(
            "vllm-device-ids", PASS, "CUDA_VISIBLE_DEVICES not set: nothing for vLLM to parse"
        )
    if facts.cuda.loaded and facts.cuda.init_code in (
        CUDA_ERROR_NO_DEVICE,
        CUDA_ERROR_INVALID_DEVICE,
    ):
        return skipped(
            "vllm-device-ids", "CUDA sees no GPU with this value (see 'cuda-visible-devices')"
        )
    bad = vllm_unparseable(value)
    if not bad:
        return result(
            "vllm-device-ids", PASS, f"every entry of {value!r} is an integer, as vLLM needs"
        )
    entries = value.split(",")
    # plan unknown: vLLM surely uses only the first entry (one GPU at least)
    used = entries[: 1 if facts.plan.unknown else facts.plan.gpus_needed]
    hit = [text for text in used if text in bad]
    suggestion = ""
    if facts.cuda.initialised and facts.nvml.available and _order_known(facts):
        indices = [facts.nvml.by_uuid(g.uuid) for g in facts.cuda.gpus]
        if all(n is not None for n in indices):
            suggestion = ",".join(str(n.index) for n in indices if n is not None)
    fix = (
        f"write the same GPUs as indices: CUDA_VISIBLE_DEVICES={suggestion}"
        if suggestion
        else "write GPU indices instead of UUIDs in CUDA_VISIBLE_DEVICES"
    )
    quoted = ", ".join(repr(t) for t in bad)
    uuid_forms = [t for t in bad if t.strip().startswith(("GPU-", "MIG-"))]
    accepted = " (CUDA itself accepts UUIDs)" if uuid_forms else ""
    status = FAIL if hit else WARN
    reach = (
        "vLLM reads it when it starts its workers"
        if hit
        else "the plan is unknown: vLLM may not reach them"
        if facts.plan.unknown
        else f"vLLM only reads the first {facts.plan.gpus_needed} entries, so it may not reach them"
    )
    return result(
        "vllm-device-ids",
        status,
        f"vLLM calls int() on every CUDA_VISIBLE_DEVICES entry it uses and fails on {quoted}"
        f"{accepted}: ValueError: invalid literal for int() with base 10: {bad[0]!r} ({reach}; "
        "vllm-project/vllm#13815, #41848)",
        fix,
        unparseable=bad,
    )


@check("device-order")
def device_order(facts: Facts, options: Options) -> List[CheckResult]:
    unavailable = cuda_unavailable(facts, "device-order")
    if unavailable:
        return unavailable
    if not facts.nvml.available:
        return skipped("device-order", "NVML unavailable: nvidia-smi's numbering is unknown")
    order = facts.env("CUDA_DEVICE_ORDER")
    names = sorted({g.name for g in facts.nvml.gpus})
    moved = []
    for gpu in facts.cuda.gpus:
        nvml = facts.nvml.by_uuid(gpu.uuid)
        if nvml is not None and nvml.index != gpu.ordinal:
            moved.append(f"CUDA {gpu.ordinal} = nvidia-smi {nvml.index}")
    cvd_set = facts.env("CUDA_VISIBLE_DEVICES") is not None
    if len(names) > 1 and order != "PCI_BUS_ID":
        return result(
            "device-order",
            WARN,
            f"GPU models differ ({', '.join(names)}) and CUDA_DEVICE_ORDER is unset: CUDA numbers "
            "GPUs fastest first, nvidia-smi and NVML by PCI bus, so index-based settings can "
            "point at different GPUs",
            "set CUDA_DEVICE_ORDER=PCI_BUS_ID in the container's env",
            mapping=moved,
        )
    if moved and not cvd_set:
        return result(
            "device-order",
            WARN,
            f"CUDA and nvidia-smi number the GPUs differently ({'; '.join(moved)})",
            "set CUDA_DEVICE_ORDER=PCI_BUS_ID in the container's env",
            mapping=moved,
        )
    return result(
        "device-order",
        PASS,
        "CUDA and nvidia-smi agree on GPU numbering"
        + (" (up to CUDA_VISIBLE_DEVICES's selection)" if cvd_set else ""),
        mapping=moved,
    )


@check("nvidia-visible-devices")
def nvidia_visible_devices(facts: Facts, options: Options) -> List[CheckResult]:
    value = facts.env("NVIDIA_VISIBLE_DEVICES")
    if value is None or value.strip() in ("", "all"):
        shown = "not set" if value is None else f"{value!r}"
        return result(
            "nvidia-visible-devices",
            PASS,
            f"NVIDIA_VISIBLE_DEVICES {shown}: the container runtime gave no list to compare",
        )
    if value.startswith("/"):
        return skipped(
            "nvidia-visible-devices",
            f"NVIDIA_VISIBLE_DEVICES={value!r} uses the volume-mount strategy; not comparable",
        )
    cuda = facts.cuda
    if value.strip() in ("none", "void"):
        status = FAIL if cuda.count < facts.plan.gpus_needed else PASS
        return result(
            "nvidia-visible-devices",
            status,
            f"NVIDIA_VISIBLE_DEVICES={value!r} asks the container runtime for no GPU; "
            f"CUDA sees {plural(cuda.count, 'GPU')}",
            "request GPUs with resources.limits nvidia.com/gpu instead of setting "
            "NVIDIA_VISIBLE_DEVICES by hand",
        )
    unavailable = cuda_unavailable(facts, "nvidia-visible-devices")
    if unavailable:
        return unavailable
    entries = [e.strip() for e in value.split(",") if e.strip()]
    seen = {uuid_key(g.uuid) for g in cuda.gpus}
    missing = [e for e in entries if e.startswith("GPU-") and uuid_key(e) not in seen]
    evidence = {"value": value, "cuda_count": cuda.count, "not_seen_by_cuda": missing}
    if missing or cuda.count < len(entries):
        return result(
            "nvidia-visible-devices",
            WARN,
            f"the container runtime gave this container {plural(len(entries), 'GPU')} "
            f"(NVIDIA_VISIBLE_DEVICES={value!r}) but CUDA sees {cuda.count}"
            + (f"; not seen: {', '.join(short_uuid(m) for m in missing)}" if missing else ""),
            "CUDA_VISIBLE_DEVICES hides some of the container's GPUs: remove it or list them all",
            **evidence,
        )
    if cuda.count > len(entries):
        return result(
            "nvidia-visible-devices",
            WARN,
            f"CUDA sees {cuda.count} GPUs but NVIDIA_VISIBLE_DEVICES={value!r} lists "
            f"{len(entries)}: the container sees GPUs it was not given (privileged pod?)",
            "do not run vLLM pods privileged; request GPUs with nvidia.com/gpu",
            **evidence,
        )
    return result(
        "nvidia-visible-devices",
        PASS,
        f"CUDA sees the {plural(len(entries), 'GPU')} the container runtime gave this container",
        **evidence,
    )


@check("gpu-count")
def gpu_count(facts: Facts, options: Options) -> List[CheckResult]:
    unavailable = cuda_unavailable(facts, "gpu-count")
    if unavailable:
        return unavailable
    plan = facts.plan
    have, need = facts.cuda.count, plan.gpus_needed
    if plan.unknown:
        return skipped(
            "gpu-count",
            f"plan unknown: GPU count not compared (CUDA sees {plural(have, 'GPU')}; see 'plan')",
        )
    evidence = {"cuda_sees": have, "plan_needs": need}
    if have < need:
        cause = (
            " CUDA_VISIBLE_DEVICES narrows it (see check 'cuda-visible-devices')."
            if facts.env("CUDA_VISIBLE_DEVICES") is not None
            else ""
        )
        return result(
            "gpu-count",
            FAIL,
            f"CUDA sees {plural(have, 'GPU')}, the plan needs {need} ({plan.describe()}, from "
            f"{plan.source}); vLLM would fail with 'World size ({need}) is larger than the "
            f"number of available GPUs ({have})'.{cause}",
            f"set resources.limits nvidia.com/gpu: {need} on the vLLM container, or lower "
            f"--tensor-parallel-size / --pipeline-parallel-size to fit {have}",
            **evidence,
        )
    if have > need:
        idle = ", ".join(gpu_label(g) for g in facts.cuda.gpus[need:])
        return result(
            "gpu-count",
            WARN,
            f"CUDA sees {plural(have, 'GPU')}, the plan uses {need}: {idle} would stay idle",
            f"request nvidia.com/gpu: {need}, or raise TP/PP/DP to use them",
            **evidence,
        )
    return result(
        "gpu-count", PASS, f"CUDA sees {plural(have, 'GPU')}, as the plan needs", **evidence
    )
