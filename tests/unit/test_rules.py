"""Every rule: it fires on the mistake, stays quiet on the correct manifest."""

from __future__ import annotations

import pytest
from test_rules_support import (
    check,
    deployment,
    finding,
    ids,
    one,
    pod_spec,
    service,
    vllm,
)

from preflight_operator.core.rules import FAIL, PASS, RULE_INFO, WARN, Policy
from preflight_operator.core.rules.ruleset.env import visible_count

GPU = 'spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]'


def test_a_correct_tp2_deployment_passes() -> None:
    result = one(deployment(pod_spec(vllm("m", "-tp", "2", gpus=2))))
    assert result.verdict == PASS
    assert result.findings == ()
    assert (result.gpus_needed, result.gpus_requested) == (2, 2)
    assert result.plan is not None
    assert result.plan.tp == 2


# -- GPU counts ----------------------------------------------------------------------------


def test_gpu_count_too_low_names_the_limit_and_the_flag() -> None:
    result = one(deployment(pod_spec(vllm("m", "--tensor-parallel-size", "4", gpus=2))))
    f = finding(result, "gpu-count-too-low")
    assert f.severity == FAIL
    assert f.field == GPU
    assert "World size (4) is larger than the number of available GPUs (2)" in f.message
    assert "spec.template.spec.containers[0].args[1]" in f.fix
    assert result.verdict == FAIL


def test_pp_and_dp_count_too() -> None:
    result = one(deployment(pod_spec(vllm("m", "-tp", "2", "-pp", "2", "-dp", "2", gpus=4))))
    assert result.gpus_needed == 8
    assert "gpu-count-too-low" in ids(result)


def test_decode_context_parallel_adds_no_gpu() -> None:
    assert one(deployment(pod_spec(vllm("m", "-tp", "4", "-dcp", "2", gpus=4)))).verdict == PASS


def test_gpu_count_extra_warns_and_respects_the_allowance() -> None:
    manifest = deployment(pod_spec(vllm("m", "-tp", "2", gpus=4)))
    result = one(manifest)
    assert finding(result, "gpu-count-extra").severity == WARN
    assert result.verdict == WARN
    assert ids(one(manifest, policy=Policy(extra_gpus_allowed=2))) == []


def test_gpu_request_missing_with_tp_above_one() -> None:
    result = one(deployment(pod_spec(vllm("m", "-tp", "2"))))
    f = finding(result, "gpu-request-missing")
    assert f.field == GPU
    assert result.gpus_requested is None


def test_gpu_request_none_warns_for_a_single_gpu_plan() -> None:
    result = one(deployment(pod_spec(vllm("m"), volumes=())))
    assert ids(result) == ["gpu-request-none"]
    assert result.verdict == WARN


def test_explicit_zero_gpus_is_missing_too() -> None:
    assert "gpu-request-missing" in ids(one(deployment(pod_spec(vllm("m", "-tp", "2", gpus=0)))))


@pytest.mark.parametrize("quantity", ["2.5", "two", "-1", "500m", True])
def test_gpu_quantity_invalid(quantity: object) -> None:
    result = one(deployment(pod_spec(vllm("m", gpus=quantity))))  # type: ignore[arg-type]
    assert finding(result, "gpu-quantity-invalid").field == GPU


@pytest.mark.parametrize("quantity", ["2", 2, "2000m", "2.0"])
def test_gpu_quantity_valid_spellings(quantity: object) -> None:
    assert one(deployment(pod_spec(vllm("m", "-tp", "2", gpus=quantity)))).verdict == PASS  # type: ignore[arg-type]


def test_requests_without_limits_and_disagreeing() -> None:
    container = vllm("m", "-tp", "2")
    container["resources"] = {"requests": {"nvidia.com/gpu": 2}}
    f = finding(one(deployment(pod_spec(container))), "gpu-request-limit-mismatch")
    assert f.field == GPU
    container["resources"] = {"requests": {"nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 2}}
    f = finding(one(deployment(pod_spec(container))), "gpu-request-limit-mismatch")
    assert f.field.endswith('resources.requests["nvidia.com/gpu"]')
    container["resources"] = {"requests": {"nvidia.com/gpu": "2"}, "limits": {"nvidia.com/gpu": 2}}
    assert one(deployment(pod_spec(container))).verdict == PASS


def test_malformed_resources_are_findings() -> None:
    container = vllm("m")
    container["resources"] = {"limits": ["nvidia.com/gpu", 2]}
    assert "manifest-invalid" in ids(one(deployment(pod_spec(container))))


# -- MIG -------------------------------------------------------------------------------


def test_mig_with_tp_above_one_fails() -> None:
    container = vllm("m", "-tp", "2")
    container["resources"] = {"limits": {"nvidia.com/mig-3g.40gb": 2}}
    result = one(deployment(pod_spec(container)))
    f = finding(result, "mig-multi-gpu")
    assert f.field.endswith('limits["nvidia.com/mig-3g.40gb"]')
    assert result.gpus_requested == 2
    assert "gpu-count-too-low" not in ids(result)  # the slices are counted as devices


def test_one_mig_slice_with_tp1_passes() -> None:
    container = vllm("m", mounts=())
    container["resources"] = {"limits": {"nvidia.com/mig-1g.10gb": 1}}
    assert one(deployment(pod_spec(container, volumes=()))).verdict == PASS


# -- /dev/shm ------------------------------------------------------------------------------


def test_shm_missing_with_several_gpu_processes() -> None:
    result = one(deployment(pod_spec(vllm("m", "-tp", "2", gpus=2, mounts=()), volumes=())))
    f = finding(result, "shm-missing")
    assert f.field == "spec.template.spec.containers[0].volumeMounts"
    assert "medium: Memory" in f.fix


def test_shm_not_needed_for_one_gpu() -> None:
    assert one(deployment(pod_spec(vllm("m", gpus=1, mounts=()), volumes=()))).verdict == PASS


def test_host_ipc_provides_shm() -> None:
    spec = pod_spec(vllm("m", "-tp", "2", gpus=2, mounts=()), volumes=(), hostIPC=True)
    assert one(deployment(spec)).verdict == PASS


@pytest.mark.parametrize(("limit", "fails"), [("64Mi", True), ("1Gi", False), ("4G", False)])
def test_shm_too_small(limit: str, fails: bool) -> None:
    volume = {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": limit}}
    result = one(deployment(pod_spec(vllm("m", "-tp", "2", gpus=2), volumes=(volume,))))
    assert ("shm-too-small" in ids(result)) is fails
    if fails:
        assert finding(result, "shm-too-small").field == (
            "spec.template.spec.volumes[0].emptyDir.sizeLimit"
        )


def test_shm_threshold_comes_from_the_policy() -> None:
    volume = {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}
    manifest = deployment(pod_spec(vllm("m", "-tp", "2", gpus=2), volumes=(volume,)))
    assert "shm-too-small" in ids(one(manifest, policy=Policy(shm_min_bytes=2 * 1024**3)))


def test_shm_on_disk_warns() -> None:
    volume = {"name": "dshm", "emptyDir": {}}
    result = one(deployment(pod_spec(vllm("m", "-tp", "2", gpus=2), volumes=(volume,))))
    assert ids(result) == ["shm-not-memory"]


def test_shm_from_the_host_passes() -> None:
    volume = {"name": "dshm", "hostPath": {"path": "/dev/shm"}}
    result = one(deployment(pod_spec(vllm("m", "-tp", "2", gpus=2), volumes=(volume,))))
    assert result.verdict == PASS


def test_shm_mount_with_trailing_slash() -> None:
    mount = {"name": "dshm", "mountPath": "/dev/shm/"}
    result = one(deployment(pod_spec(vllm("m", "-tp", "2", gpus=2, mounts=(mount,)))))
    assert result.verdict == PASS


# -- CUDA_VISIBLE_DEVICES and friends -------------------------------------------------------


def cvd(value: str, *args: str, gpus: int = 2) -> list[str]:
    env = [{"name": "CUDA_VISIBLE_DEVICES", "value": value}]
    return ids(one(deployment(pod_spec(vllm("m", *args, gpus=gpus, env=env)))))


def test_cvd_set_warns_even_when_right() -> None:
    assert cvd("0,1", "-tp", "2") == ["cvd-set"]


@pytest.mark.parametrize(
    "value",
    ["GPU-7b01fc6f-0352-789c-6847-ce5195328e81,GPU-1", "MIG-1234", "GPU-ea300b2e"],
)
def test_cvd_uuid_fails(value: str) -> None:
    assert "cvd-uuid" in cvd(value, gpus=1)


@pytest.mark.parametrize(
    ("value", "args"),
    [
        ("0", ["-tp", "2"]),  # one entry for two workers
        ("0,0", ["-tp", "2"]),  # duplicate: cuInit fails
        ("0,5", ["-tp", "2"]),  # 5 is not a GPU of a 2-GPU pod, hides itself
        ("0,abc,1", ["-tp", "2"]),  # invalid entry truncates
        ("", []),  # empty hides every GPU
        ("-1", []),
    ],
)
def test_cvd_too_few(value: str, args: list[str]) -> None:
    found = cvd(value, *args)
    assert "cvd-too-few" in found
    assert "cvd-set" in found


@pytest.mark.parametrize(
    ("value", "devices", "count"),
    [  # the rows of docs/GPU_FACTS.md, on a 2-GPU pod
        ("0", 2, 1),
        ("1,0", 2, 2),
        ("0,0", 2, 0),  # a duplicate fails cuInit: nothing
        ("0,1,0", 2, 0),
        ("5", 2, 0),
        ("0,5,1", 2, 1),  # an invalid entry drops itself and everything after
        ("abc", 2, 0),
        ("0,abc,1", 2, 1),
        (" 0, 1", 2, 2),
        ("0 ,1", 2, 2),
        ("", 2, 0),
        ("-1", 2, 0),
        ("GPU-ea300b2e,GPU-7b01fc6f", 2, 2),
        ("7", None, 1),  # device count unknown: any ordinal may exist
    ],
)
def test_cvd_visible_count_matches_gpu_facts(value: str, devices: int | None, count: int) -> None:
    assert visible_count(value, devices)[0] == count


def test_cvd_duplicate_with_one_gpu_plan() -> None:
    assert "cvd-too-few" in cvd("0,0")


def test_cvd_with_spaces_is_fine() -> None:
    assert cvd(" 0, 1", "-tp", "2") == ["cvd-set"]


def test_cvd_set_in_a_shell_prefix_is_seen() -> None:
    container = vllm("CUDA_VISIBLE_DEVICES=0 vllm serve m -tp 2", command=("bash", "-c"), gpus=2)
    result = one(deployment(pod_spec(container)))
    assert {"cvd-set", "cvd-too-few"} <= set(ids(result))
    assert finding(result, "cvd-set").field == "spec.template.spec.containers[0].args[0]"


def test_nvidia_visible_devices_warns() -> None:
    env = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
    result = one(deployment(pod_spec(vllm("m", env=env, mounts=()), volumes=())))
    assert "nvidia-visible-devices-set" in ids(result)
    assert "behind the scheduler" in finding(result, "nvidia-visible-devices-set").message


def test_vllm_port_invalid() -> None:
    env = [{"name": "VLLM_PORT", "value": "tcp://10.0.0.1:8000"}]
    result = one(deployment(pod_spec(vllm("m", gpus=1, env=env))))
    assert ids(result) == ["vllm-port-invalid"]
    env = [{"name": "VLLM_PORT", "value": "8000"}]
    assert one(deployment(pod_spec(vllm("m", gpus=1, env=env)))).verdict == PASS


# -- the Service named vllm -----------------------------------------------------------------


def test_service_named_vllm_injects_vllm_port() -> None:
    result = one(deployment(pod_spec(vllm("m", gpus=1))), service("vllm"))
    f = finding(result, "vllm-port-service")
    assert "appears to be a URI" in f.message
    assert f.field == "spec.template.spec.enableServiceLinks"


@pytest.mark.parametrize(
    "svc",
    [
        service("vllm", clusterIP="None"),  # headless: no variables
        service("vllm", type="ExternalName", externalName="x.example"),
        service("vllm", namespace="other"),  # another namespace
        service("vllm-server"),  # VLLM_SERVER_PORT is harmless
    ],
)
def test_services_that_inject_nothing(svc: dict[str, object]) -> None:
    assert one(deployment(pod_spec(vllm("m", gpus=1))), svc).verdict == PASS


def test_service_links_disabled_or_explicit_port() -> None:
    spec = pod_spec(vllm("m", gpus=1), enableServiceLinks=False)
    assert one(deployment(spec), service("vllm")).verdict == PASS
    env = [{"name": "VLLM_PORT", "value": "8001"}]
    assert one(deployment(pod_spec(vllm("m", gpus=1, env=env))), service("vllm")).verdict == PASS


# -- the command line -----------------------------------------------------------------------


@pytest.mark.parametrize(("value", "needle"), [("four", "not an integer"), ("0", ">= 1")])
def test_malformed_tp_is_a_finding(value: str, needle: str) -> None:
    result = one(deployment(pod_spec(vllm("m", "-tp", value, gpus=1))))
    f = finding(result, "vllm-args-invalid")
    assert needle in f.message
    assert f.field == "spec.template.spec.containers[0].args[1]"  # the -tp token
    assert result.plan is None
    assert result.gpus_needed is None
    assert "gpu-count-too-low" not in ids(result)


def test_undefined_variable_is_unknown_not_refused() -> None:
    # issue 24: the kubelet passes an undefined $(TP) literally, but a controller or an
    # admission webhook may define it before the pod starts: unknown, never a denial
    result = one(deployment(pod_spec(vllm("m", "-tp", "$(TP)", gpus=2))))
    assert ids(result) == ["plan-unresolved"]
    f = finding(result, "plan-unresolved")
    assert "$(TP)" in f.message
    assert "not defined" in f.message


def test_variable_from_a_secret_is_unresolved_not_wrong() -> None:
    env = [{"name": "TP", "valueFrom": {"secretKeyRef": {"name": "s", "key": "tp"}}}]
    result = one(deployment(pod_spec(vllm("m", "-tp", "$(TP)", gpus=2, env=env))))
    assert ids(result) == ["plan-unresolved"]
    assert "$(TP)" in finding(result, "plan-unresolved").message


def test_config_equals_form_is_flagged() -> None:
    result = one(deployment(pod_spec(vllm("m", "--config=/etc/vllm/c.yaml", gpus=1))))
    assert ids(result) == ["vllm-args-ignored"]


def test_unparsable_shell_script_that_mentions_vllm() -> None:
    container = vllm("vllm serve 'm -tp 2", command=("sh", "-c"), gpus=1)
    result = one(deployment(pod_spec(container)))
    assert ids(result) == ["vllm-command-unparsed"]
    assert result.plan is None


def test_disabled_rules_are_not_reported() -> None:
    manifest = deployment(pod_spec(vllm("m", "-tp", "4", gpus=2, mounts=()), volumes=()))
    policy = Policy(disabled=frozenset({"shm-missing", "gpu-count-too-low"}))
    assert one(manifest, policy=policy).verdict == PASS


def test_every_rule_is_documented() -> None:
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "RULES.md").read_text()
    missing = [rule_id for rule_id in RULE_INFO if f"`{rule_id}`" not in doc]
    assert missing == []


def test_every_rule_documents_its_certainty_source_and_default_action() -> None:
    """The Rules table gives each rule's certainty source and default action as the code
    has them; each rule's own section (or its line in a shared section) says both."""
    import re
    from pathlib import Path

    from preflight_operator.core.rules.registry import action_for

    doc = (Path(__file__).parents[2] / "docs" / "RULES.md").read_text()
    table = doc.split("\n## Rules\n", 1)[1].split("\n\n### ", 1)[0]
    rows = {
        m.group(1): (m.group(2).strip(), m.group(3).strip())
        for m in re.finditer(r"^\| `([a-z0-9-]+)` \|.*\|([^|]+)\|([^|]+)\|$", table, re.M)
    }
    wanted = {
        rule_id: (info.basis.kind if info.basis else "", action_for(rule_id, "Enforce"))
        for rule_id, info in RULE_INFO.items()
    }
    assert rows == wanted
    sections = re.split(r"^### ", doc, flags=re.M)
    for section in sections:
        heading = section.split("\n", 1)[0]
        named = [r for r in re.findall(r"`([a-z0-9-]+)`", heading) if r in RULE_INFO]
        for rule_id in named:
            kind, action = wanted[rule_id]
            line = f"*Certainty source:* {kind}: "
            said = [ln for ln in section.splitlines() if line in ln]
            if len(named) > 1:
                said = [ln for ln in said if ln.startswith(f"- `{rule_id}`: ")]
            assert len(said) == 1, (rule_id, said)
            assert f"*Default action:* {action}." in said[0], rule_id


def test_non_vllm_containers_and_objects_are_ignored() -> None:
    sidecar = {"name": "proxy", "image": "envoyproxy/envoy:v1", "args": ["-c", "/etc/envoy"]}
    spec = pod_spec(vllm("m", gpus=1), sidecar)
    results = check(deployment(spec), service("web"), {"kind": "ConfigMap"}, {"foo": 1})
    assert [r.container for r in results] == ["vllm"]
    assert check(deployment(pod_spec(sidecar))) == []


def test_findings_are_ordered_fail_first() -> None:
    env = [{"name": "CUDA_VISIBLE_DEVICES", "value": "0,1"}]
    result = one(deployment(pod_spec(vllm("m", "-tp", "4", gpus=2, env=env))))
    severities = [f.severity for f in result.findings]
    assert severities == sorted(severities, key=[FAIL, WARN].index)


def test_result_json_shape() -> None:
    doc = one(deployment(pod_spec(vllm("m", "-tp", "2", gpus=1)))).to_dict()
    assert list(doc) == [
        "workload",
        "namespace",
        "container",
        "plan",
        "gpus_requested",
        "verdict",
        "findings",
    ]
    assert doc["workload"] == "Deployment/llm"
    assert doc["plan"] == {"tp": 2, "pp": 1, "dp": 1, "dp_local": 1, "gpus_needed": 2}
    assert set(doc["findings"][0]) == {"id", "severity", "message", "field", "fix"}
