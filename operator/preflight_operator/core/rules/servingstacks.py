"""The serving stacks whose controller builds the vLLM pod from its own fields: KServe,
KubeAI, production-stack, NVIDIA Dynamo. Each extractor returns the pod the controller
would create, with the command it would run; `argv_paths` map every token back to the
field the user wrote. What each controller does is in tests/data/crds/KINDS.md, read from
its source (paths cited there and below).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from preflight_operator.core.rules.command import image_entrypoint
from preflight_operator.core.rules.template import (
    DYNAMO,
    KSERVE,
    KUBEAI,
    LWS,
    OME,
    PRODUCTION_STACK,
    Group,
    GroupMember,
    PodTemplate,
    Resolve,
    dig,
    meta,
    num,
    required,
)

# -- KServe ----------------------------------------------------------------------------------
#
# InferenceService: `spec.predictor` is a PodSpec plus `model`. With `model`, the main
# container `kserve-container` is the (Cluster)ServingRuntime's container of that name merged
# with `spec.predictor.model` (isvc fields win, args appended after the runtime's, command
# and args kept apart: pkg/controller/v1beta1/inferenceservice/utils MergeRuntimeContainers).
# The runtime is `model.runtime`, else the one that supports `model.modelFormat.name` with
# autoSelect, by priority. Multi-node (`spec.predictor.workerSpec`): the controller computes
# and writes the GPU limits and the TENSOR_PARALLEL_SIZE / PIPELINE_PARALLEL_SIZE env itself.

SERVING_RUNTIMES = ("ServingRuntime", "ClusterServingRuntime")
_KSERVE_MAIN = "kserve-container"
# the pod fields a runtime and the predictor contribute (MergePodSpec)
_POD_FIELDS = frozenset(
    ("volumes", "nodeSelector", "affinity", "tolerations", "hostIPC", "resourceClaims")
)


def _named(containers: Any, name: str) -> tuple[int, Mapping[str, Any]] | None:
    for i, container in enumerate(containers if isinstance(containers, list) else []):
        if isinstance(container, Mapping) and container.get("name") == name:
            return i, container
    return None


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _every(resolve: Resolve, kind: str) -> list[Mapping[str, Any]]:
    """Every object of ``kind`` the resolver knows (it answers name "*" with items)."""
    found = resolve(kind, "*")
    items = found.get("items") if isinstance(found, Mapping) else None
    return [i for i in items if isinstance(i, Mapping)] if isinstance(items, list) else []


def _runtime_for(
    model: Mapping[str, Any], resolve: Resolve
) -> tuple[str, Mapping[str, Any]] | None:
    """(display name, runtime object) the model runs on, when it can be known here."""
    name = model.get("runtime")
    if isinstance(name, str):
        for kind in SERVING_RUNTIMES:
            found = resolve(kind, name)
            if found is not None:
                return f"{kind}/{name}", found
        return None
    wanted = dig(model, ("modelFormat", "name"))
    candidates: list[tuple[int, str, Mapping[str, Any]]] = []
    for kind in SERVING_RUNTIMES:
        for runtime in _every(resolve, kind):
            formats = dig(runtime, ("spec", "supportedModelFormats"))
            for fmt in formats if isinstance(formats, list) else []:
                if (
                    isinstance(fmt, Mapping)
                    and fmt.get("name") == wanted
                    and fmt.get("autoSelect") is True
                ):
                    display = f"{kind}/{meta(runtime, None)[0]}"
                    candidates.append((-num(fmt.get("priority"), 0), display, runtime))
    if not candidates:
        return None
    candidates.sort(key=lambda c: c[0])
    return candidates[0][1], candidates[0][2]


def _merged_main(
    runtime: Mapping[str, Any], where: str, model: Mapping[str, Any], isvc: str
) -> tuple[dict[str, Any], tuple[str, ...]] | None:
    """The main container KServe runs: MergeRuntimeContainers (kserve/kserve
    pkg/controller/v1beta1/inferenceservice/utils/utils.go, commit aaac4e29) is a strategic
    merge patch of the model over the runtime container, then ``args`` set to the runtime's
    followed by the model's. ``command`` and ``args`` stay apart: a runtime that sets only
    ``args`` (usual for vllm/vllm-openai) keeps the image's entrypoint
    (``command.image_entrypoint``: `vllm serve`, the api_server module before 0.11.1), which
    rules.command reads for the images it knows. Writing those args into ``command`` (as
    this did until issue 35) lost the entrypoint, so such an InferenceService went unjudged.
    ``argv_paths`` are the paths of the tokens rules.command yields: command then args, or,
    args only on a known image, the image field once per word of its entrypoint, then the
    args."""
    found = _named(dig(runtime, ("spec", "containers")), _KSERVE_MAIN)
    if found is None:
        return None
    index, base = found
    rpath = f"{where} spec.containers[{index}]"
    container = {k: v for k, v in base.items() if k not in ("args", "command")}
    for key in ("image", "env", "resources", "volumeMounts"):
        if key in model:
            container[key] = model[key]
    own = model.get("command")
    command = own if isinstance(own, list) else base.get("command")
    prefix = "spec.predictor.model.command" if isinstance(own, list) else f"{rpath}.command"
    paths: list[str] = []
    if isinstance(command, list) and command:
        container["command"] = [str(c) for c in command]
        paths = [f"{prefix}[{i}]" for i in range(len(command))]
    else:
        image = "spec.predictor.model.image" if "image" in model else f"{rpath}.image"
        # the image's entrypoint (`vllm serve`, or the api_server module before 0.11.1)
        paths = [image] * len(image_entrypoint(container.get("image")))
    args: list[str] = []
    for i, arg in enumerate(_listed(base.get("args"))):
        args.append(str(arg).replace("{{.Name}}", isvc))
        paths.append(f"{rpath}.args[{i}]")
    for i, arg in enumerate(_listed(model.get("args"))):
        args.append(str(arg))
        paths.append(f"spec.predictor.model.args[{i}]")
    if args:
        container["args"] = args
    container["name"] = _KSERVE_MAIN
    return container, tuple(paths)


def inference_service(
    obj: Mapping[str, Any], name: str, namespace: str | None, resolve: Resolve
) -> list[PodTemplate]:
    predictor = dig(obj, ("spec", "predictor"))
    if not isinstance(predictor, Mapping):
        return []
    kind = "InferenceService"
    worker = predictor.get("workerSpec")
    managed = isinstance(worker, Mapping)
    env: dict[str, str] = {}
    if isinstance(worker, Mapping):
        env = {
            "TENSOR_PARALLEL_SIZE": str(num(worker.get("tensorParallelSize"), 1)),
            "PIPELINE_PARALLEL_SIZE": str(num(worker.get("pipelineParallelSize"), 1)),
        }
    model = predictor.get("model")
    if not isinstance(model, Mapping):
        if not isinstance(predictor.get("containers"), list):
            return []
        return [
            PodTemplate(
                kind, name, namespace, predictor, "spec.predictor", injected_env=env,
                family=KSERVE, gpus_elsewhere=managed,
            )
        ]  # fmt: skip
    runtime = _runtime_for(model, resolve)
    if runtime is None:
        return []  # which command runs is unknown here: nothing to judge
    where, body = runtime
    merged = _merged_main(body, where, model, name)
    if merged is None:
        return []
    container, paths = merged
    runtime_spec = body.get("spec")
    spec: dict[str, Any] = {}
    if isinstance(runtime_spec, Mapping):
        spec.update({k: v for k, v in runtime_spec.items() if k in _POD_FIELDS})
    spec.update({k: v for k, v in predictor.items() if k in _POD_FIELDS})
    spec["containers"] = [container]
    return [
        PodTemplate(
            kind, name, namespace, spec, "spec.predictor.model", injected_env=env,
            family=KSERVE, argv_paths=paths, gpus_elsewhere=managed,
        )
    ]  # fmt: skip


def serving_runtime(obj: Mapping[str, Any], name: str, namespace: str | None) -> list[PodTemplate]:
    """A template, no pods: no GPU is normal (the InferenceService adds them); a TP in the
    args with a GPU count fixed here is judged."""
    kind = str(obj.get("kind"))
    out: list[PodTemplate] = []
    spec = obj.get("spec")
    if isinstance(spec, Mapping) and isinstance(spec.get("containers"), list):
        out.append(
            PodTemplate(kind, name, namespace, spec, "spec", family=KSERVE, gpus_elsewhere=True)
        )
    worker = dig(obj, ("spec", "workerSpec"))
    if isinstance(worker, Mapping) and isinstance(worker.get("containers"), list):
        out.append(
            PodTemplate(
                kind, name, namespace, worker, "spec.workerSpec", "worker", family=KSERVE,
                gpus_elsewhere=True,
            )
        )  # fmt: skip
    return out


def _parallelism(part: Mapping[str, Any], spec: Mapping[str, Any]) -> Mapping[str, Any]:
    own = part.get("parallelism")
    if isinstance(own, Mapping):
        return own
    top = spec.get("parallelism")
    return top if isinstance(top, Mapping) else {}


def _llm_argv(model: str, par: Mapping[str, Any], *, worker: bool, multi: bool) -> list[str]:
    tp, pp = num(par.get("tensor"), 1), num(par.get("pipeline"), 1)
    dp, dpl = num(par.get("data"), 1), num(par.get("dataLocal"), 0)
    argv = ["vllm", "serve", model, "-tp", str(tp)]
    if dp > 1:
        argv += ["-dp", str(dp), "-dpl", str(dpl or dp)]
        if worker:
            argv.append("--headless")
    elif pp > 1:
        argv += ["-pp", str(pp)]
        if multi:
            argv += ["--nnodes", str(pp)]
    return argv


def llm_inference_service(
    obj: Mapping[str, Any], name: str, namespace: str | None
) -> list[PodTemplate]:
    """`spec.parallelism` is the plan; the vLLM command comes from the
    LLMInferenceServiceConfig presets (Go templates over these fields:
    config/llmisvcconfig/config-llm-*.yaml), so a container `main` without a command gets
    the one the preset renders. Without `worker`: a Deployment; with it: an LWS whose
    size is data/dataLocal (DP) or pipeline (workload_multi_node.go)."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return []
    model = str(dig(spec, ("model", "name")) or "model")
    out: list[PodTemplate] = []
    for base, part in (("spec", spec), ("spec.prefill", spec.get("prefill"))):
        if not isinstance(part, Mapping):
            continue
        par = _parallelism(part, spec)
        multi = isinstance(part.get("worker"), Mapping)
        for role, key in (("main", "template"), ("worker", "worker")):
            pod = part.get(key)
            found = _named(pod.get("containers"), "main") if isinstance(pod, Mapping) else None
            if found is None or not isinstance(pod, Mapping):
                continue
            container = dict(found[1])
            paths: tuple[str, ...] = ()
            if not container.get("command"):
                argv = _llm_argv(model, par, worker=role == "worker", multi=multi)
                container["command"] = argv
                where = f"{base}.parallelism" if "parallelism" in part else "spec.parallelism"
                paths = (f"{base}.{key}", f"{base}.{key}", "spec.model.name") + (where,) * (
                    len(argv) - 3
                )
            label = f"prefill-{role}" if base == "spec.prefill" else role
            out.append(
                PodTemplate(
                    "LLMInferenceService", name, namespace, {**pod, "containers": [container]},
                    f"{base}.{key}", label, family=KSERVE, argv_paths=paths,
                    shm_provided=True,  # the preset's pod (its volumes) is not in this object
                )
            )  # fmt: skip
    return out


# -- OME ServingRuntime / ClusterServingRuntime (ome.io) -------------------------------------
#
# sgl-project/ome at 17b77edad23bae262e0c9adb7f12039397a5d33d: a runtime's engine is
# `spec.engineConfig` (pkg/apis/ome/v1beta1 EngineSpec: a PodSpec inline, `runner` the main
# container, `leader` / `worker` with `size` for multi-node), the decode side of a
# prefill-decode runtime `spec.decoderConfig` (DecoderSpec, the same shape); `routerConfig`
# is the router, not an engine. The controller builds the pod from the config's PodSpec and
# merges `runner` onto the container of its name, else appends it (pkg/controller/v1beta1/
# inferenceservice/reconcilers/common/podspec_reconciler.go resolveContainer,
# ReconcileWorkerPodSpec; utils/merging.go MergeRuntimeContainers). A multi-node engine is
# a LeaderWorkerSet of the leader and `worker.size` workers (LWS injects its LWS_* env).
# A runtime makes no pods: like KServe's, no GPU here is normal (the InferenceService or an
# AcceleratorClass may add them), a count written here is judged.

_OME_PARTS = ("engineConfig", "decoderConfig")
_OME_NOT_POD = frozenset(
    ("runner", "leader", "worker", "minReplicas", "maxReplicas", "scaleTarget", "scaleMetric",
     "acceleratorOverride", "annotations", "labels", "size", "config")
)  # fmt: skip


def _ome_pod(part: Mapping[str, Any], runner: Any) -> dict[str, Any] | None:
    """The PodSpec of an OME engine part with its runner merged in (None: no container)."""
    pod = {k: v for k, v in part.items() if k not in _OME_NOT_POD}
    containers = [c for c in _listed(part.get("containers")) if isinstance(c, Mapping)]
    if isinstance(runner, Mapping):
        found = _named(containers, str(runner.get("name") or ""))
        if found is None:
            containers.append(dict(runner))
        else:
            containers[found[0]] = {**found[1], **runner}
    if not containers:
        return None
    pod["containers"] = containers
    return pod


def ome_runtime(obj: Mapping[str, Any], name: str, namespace: str | None) -> list[PodTemplate]:
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return []
    kind = str(obj.get("kind"))
    out: list[PodTemplate] = []
    for key in _OME_PARTS:
        part = spec.get(key)
        if not isinstance(part, Mapping):
            continue
        label = "engine" if key == "engineConfig" else "decoder"
        base = f"spec.{key}"
        leader, worker = part.get("leader"), part.get("worker")
        if not isinstance(worker, Mapping):
            pod = _ome_pod(part, part.get("runner"))
            if pod is not None:
                out.append(
                    PodTemplate(kind, name, namespace, pod, base, label, family=OME,
                                gpus_elsewhere=True)
                )  # fmt: skip
            continue
        size = num(worker.get("size"), 1) + 1
        held = leader if isinstance(leader, Mapping) else {}
        lead = _ome_pod({**part, **held}, held.get("runner") or part.get("runner"))
        work = _ome_pod(worker, held.get("runner") or part.get("runner"))
        if lead is None or work is None:
            continue
        lead_path = f"{base}.leader" if held else base
        size_path = f"{base}.worker.size"
        group = Group(
            size_path, LWS,
            (GroupMember(lead, lead_path, 1, size_path),
             GroupMember(work, f"{base}.worker", size - 1, size_path)),
        )  # fmt: skip
        env = {"LWS_GROUP_SIZE": str(size), "LWS_NAME": name}
        out.append(
            PodTemplate(kind, name, namespace, lead, lead_path, f"{label}-leader", group,
                        {**env, "LWS_WORKER_INDEX": "0"}, family=OME, gpus_elsewhere=True,
                        group_leader=True)
        )  # fmt: skip
        out.append(
            PodTemplate(kind, name, namespace, work, f"{base}.worker", f"{label}-worker",
                        group, {**env, "LWS_WORKER_INDEX": "1"}, family=OME,
                        gpus_elsewhere=True)
        )  # fmt: skip
    if not out and isinstance(spec.get("containers"), list):
        # the older ServingRuntimePodSpec layout: containers at spec
        out.append(
            PodTemplate(kind, name, namespace, spec, "spec", family=OME, gpus_elsewhere=True)
        )
    return out


# -- KubeAI Model ----------------------------------------------------------------------------
#
# No pod template: the controller builds the pod (internal/modelcontroller/engine_vllm.go):
# `python3 -m vllm.entrypoints.openai.api_server --model=<url> ...` then `spec.args`; its
# resources are the resource profile's, times N of `resourceProfile: <name>:<N>`. KubeAI's
# default profiles (charts/kubeai/values.yaml): nvidia-gpu-* = nvidia.com/gpu: 1, amd-gpu-*
# = amd.com/gpu: 1, cpu = none. Other profiles are cluster configuration: unknown here.

_KUBEAI_PROFILES = (("nvidia-gpu-", "nvidia.com/gpu"), ("amd-gpu-", "amd.com/gpu"))


def kubeai_model(obj: Mapping[str, Any], name: str, namespace: str | None) -> list[PodTemplate]:
    spec = obj.get("spec")
    if not isinstance(spec, Mapping) or str(spec.get("engine", "")).upper() != "VLLM":
        return []
    url = str(spec.get("url") or "")
    model = url.split("://", 1)[1] if url.startswith("hf://") else "/model"
    argv = ["python3", "-m", "vllm.entrypoints.openai.api_server", f"--model={model}"]
    paths = ["spec.engine"] * 3 + ["spec.url"]
    args = spec.get("args")
    for i, arg in enumerate(args if isinstance(args, list) else []):
        argv.append(str(arg))
        paths.append(f"spec.args[{i}]")
    container: dict[str, Any] = {"name": "server", "command": argv}
    profile = str(spec.get("resourceProfile") or "")
    pname, _, count = profile.partition(":")
    unknown = ""
    if pname == "cpu":
        container["image"] = "vllm/vllm-cpu"  # KubeAI's CPU profile: no accelerator
    else:
        resource = next((r for p, r in _KUBEAI_PROFILES if pname.startswith(p)), None)
        if resource is None or not count.isdigit():
            unknown = (
                f"spec.resourceProfile {profile!r}: that profile's resources are KubeAI's "
                "cluster configuration (resourceProfiles), not in the manifest"
            )
        else:
            container["resources"] = {"limits": {resource: int(count)}}
    return [
        PodTemplate(
            "Model", name, namespace, {"containers": [container]}, "spec", family=KUBEAI,
            argv_paths=tuple(paths), shm_provided=True, gpus_path="spec.resourceProfile",
            unknown=unknown,
        )
    ]  # fmt: skip


# -- production-stack VLLMRuntime ------------------------------------------------------------


# The CRD (tests/data/crds/production-stack, a6c01db05f65) requires spec.model (with
# modelURL), spec.vllmConfig and spec.deploymentConfig (with image and resources). The
# first layout (vllm-project/production-stack 5b7af2b1, 2025-05-16) kept tensorParallelSize,
# extraArgs, env at spec and resources, image, replicas beside them; ff533f81 (2025-06-06,
# "Refract the structure of VLLMRuntime CRD") moved them under vllmConfig and
# deploymentConfig. Such an object is refused by today's CRD, and read as today's layout
# it showed only "no GPU requested" (its spec.resources.gpu unread).
_VLLM_RUNTIME_REQUIRED = (
    "spec.model",
    "spec.vllmConfig",
    "spec.deploymentConfig",
    "spec.deploymentConfig.image",
    "spec.deploymentConfig.resources",
)
# where each field of the first layout lives in today's CRD (read from its schema)
_VLLM_RUNTIME_OLD = {
    **dict.fromkeys(
        ("enableChunkedPrefill", "enablePrefixCaching", "tensorParallelSize",
         "gpuMemoryUtilization", "maxLoras", "extraArgs", "v1", "env"),
        "vllmConfig",
    ),
    **dict.fromkeys(("resources", "image", "replicas", "deploymentStrategy"), "deploymentConfig"),
    "hfTokenSecret": "model",
}  # fmt: skip


def _vllm_runtime_invalid(spec: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(field, what, fix) when the VLLMRuntime CRD refuses this spec, else None."""
    missing = required({"spec": spec}, _VLLM_RUNTIME_REQUIRED)
    if missing is None and isinstance(dig(spec, ("model", "modelURL")), str):
        return None
    field = missing or "spec.model.modelURL"
    why = "is required by the VLLMRuntime CRD: the API server rejects this object"
    old = sorted(k for k in _VLLM_RUNTIME_OLD if k in spec)
    if old:
        moves = ", ".join(f"spec.{k} to spec.{_VLLM_RUNTIME_OLD[k]}.{k}" for k in old)
        why += " (this is the layout before production-stack's CRD restructuring, ff533f81)"
        fix = f"move {moves}, as in operator/config/samples of production-stack"
    else:
        fix = f"add {field} (operator/config/samples of production-stack has one)"
    return field, why, fix


def vllm_runtime(obj: Mapping[str, Any], name: str, namespace: str | None) -> list[PodTemplate]:
    """The controller writes the Deployment (operator/internal/controller/
    vllmruntime_controller.go): `vllm serve <modelURL>` with flags from spec.model and
    spec.vllmConfig (--tensor-parallel-size only when > 0), then vllmConfig.extraArgs; the
    GPUs are deploymentConfig.resources.gpu on gpuType (default nvidia.com/gpu)."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return []
    invalid = _vllm_runtime_invalid(spec)
    if invalid is not None:
        return [
            PodTemplate("VLLMRuntime", name, namespace, {"containers": []}, "spec",
                        family=PRODUCTION_STACK, invalid=invalid)
        ]  # fmt: skip
    found_model, found_vllm = spec.get("model"), spec.get("vllmConfig")
    model: Mapping[str, Any] = found_model if isinstance(found_model, Mapping) else {}
    vllm: Mapping[str, Any] = found_vllm if isinstance(found_vllm, Mapping) else {}
    argv = ["vllm", "serve", str(model.get("modelURL") or "model")]
    paths = ["spec", "spec", "spec.model.modelURL"]

    def add(flag: str, value: object, where: str) -> None:
        if value is not None and value != "":
            argv.extend((flag, str(value)))
            paths.extend((where, where))

    tp = vllm.get("tensorParallelSize")
    if num(tp, 0) > 0 or (tp is not None and num(tp, -1) < 0):
        add("--tensor-parallel-size", tp, "spec.vllmConfig.tensorParallelSize")
    add("--max-model-len", model.get("maxModelLen"), "spec.model.maxModelLen")
    add("--dtype", model.get("dtype"), "spec.model.dtype")
    add(
        "--gpu-memory-utilization",
        vllm.get("gpuMemoryUtilization"),
        "spec.vllmConfig.gpuMemoryUtilization",
    )
    extra = vllm.get("extraArgs")
    for i, arg in enumerate(extra if isinstance(extra, list) else []):
        argv.append(str(arg))
        paths.append(f"spec.vllmConfig.extraArgs[{i}]")
    container: dict[str, Any] = {"name": "vllm", "command": argv}
    resources = dig(spec, ("deploymentConfig", "resources"))
    if isinstance(resources, Mapping) and resources.get("gpu") not in (None, ""):
        gpu_type = str(resources.get("gpuType") or "nvidia.com/gpu")
        container["resources"] = {"limits": {gpu_type: resources["gpu"]}}
    return [
        PodTemplate(
            "VLLMRuntime", name, namespace, {"containers": [container]}, "spec",
            family=PRODUCTION_STACK, argv_paths=tuple(paths), shm_provided=True,
            gpus_path="spec.deploymentConfig.resources.gpu",
        )
    ]  # fmt: skip


# -- NVIDIA Dynamo DynamoGraphDeployment --------------------------------------------------------


def dynamo_graph(obj: Mapping[str, Any], name: str, namespace: str | None) -> list[PodTemplate]:
    """v1alpha1 `spec.services{}` (extraPodSpec.mainContainer, resources.limits.gpu on
    gpuType, multinode.nodeCount) and v1beta1 `spec.components[]` (podTemplate, main
    container `main`). Workers run `python3 -m dynamo.vllm` with vLLM's engine flags; with
    nodeCount > 1 the operator adds --nnodes/--node-rank itself (internal/dynamo/
    backend_vllm.go), so each pod runs its share."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return []
    kind = "DynamoGraphDeployment"
    out: list[PodTemplate] = []
    services = spec.get("services")
    for key, service in services.items() if isinstance(services, Mapping) else []:
        extra = dig(service, ("extraPodSpec",))
        main = extra.get("mainContainer") if isinstance(extra, Mapping) else None
        if not isinstance(extra, Mapping) or not isinstance(main, Mapping):
            continue
        base = f"spec.services.{key}"
        container = {"name": "main", **main}
        gpu = dig(service, ("resources", "limits", "gpu"))
        if gpu not in (None, ""):
            gpu_type = str(dig(service, ("resources", "limits", "gpuType")) or "nvidia.com/gpu")
            container["resources"] = {"limits": {gpu_type: gpu}}
        others = extra.get("containers")
        pod = {k: v for k, v in extra.items() if k not in ("mainContainer", "containers")}
        pod["containers"] = [container, *(others if isinstance(others, list) else [])]
        out.append(
            PodTemplate(
                kind, name, namespace, pod, f"{base}.extraPodSpec", str(key), family=DYNAMO,
                shm_provided=True, nodes=max(1, num(dig(service, ("multinode", "nodeCount")), 1)),
                gpus_path=f"{base}.resources.limits.gpu",
            )
        )  # fmt: skip
    components = spec.get("components")
    for i, component in enumerate(components if isinstance(components, list) else []):
        pod = dig(component, ("podTemplate", "spec"))
        if not isinstance(pod, Mapping):
            continue
        nodes = max(1, num(dig(component, ("multinode", "nodeCount")), 1))
        label = str(component.get("name") or f"components[{i}]")
        out.append(
            PodTemplate(
                kind, name, namespace, pod, f"spec.components[{i}].podTemplate.spec", label,
                family=DYNAMO, shm_provided=True, nodes=nodes,
            )
        )  # fmt: skip
    return out
