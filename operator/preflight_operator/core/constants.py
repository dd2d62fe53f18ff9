"""Names shared by the operator, the webhooks, the chart and the demo.

Every label, annotation, container name and API coordinate lives here, so that a rename is
one edit and a typo is an import error rather than a silent mismatch with the chart.
"""

from __future__ import annotations

from typing import Final

GROUP: Final = "vllm-preflight.io"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
GPUVALIDATION_KIND: Final = "GPUValidation"
GPUVALIDATION_PLURAL: Final = "gpuvalidations"
POLICY_KIND: Final = "PreflightPolicy"
POLICY_PLURAL: Final = "preflightpolicies"

# Labels and annotations (docs/dev/OPERATOR_CONTRACT.md).
PREFIX: Final = "vllm-preflight.io/"
LABEL_INJECT: Final = PREFIX + "inject"
LABEL_INJECTED: Final = PREFIX + "injected"
LABEL_WORKLOAD: Final = PREFIX + "workload"
ANNOTATION_STATUS: Final = PREFIX + "status"
ANNOTATION_REASON: Final = PREFIX + "reason"
ANNOTATION_CHECKED_AT: Final = PREFIX + "checked-at"
ANNOTATION_REMEDIATED: Final = PREFIX + "remediated"
ANNOTATION_CREATED_BY: Final = PREFIX + "created-by"  # provenance.py: controller | other
INJECT_ENABLED: Final = "enabled"
INJECT_DISABLED: Final = "disabled"
# The server-side selector of the operator's pod watch: it never lists unrelated pods.
INJECTED_POD_SELECTOR: Final = f"{LABEL_INJECTED}=true"

# Injected init containers and their shared volume.
INSTALL_CONTAINER: Final = "preflight-install"
CHECK_CONTAINER: Final = "preflight-check"
VOLUME_NAME: Final = "preflight"
MOUNT_PATH: Final = "/preflight"
ZIPAPP_NAME: Final = "vllm-preflight.pyz"
ZIPAPP_PATH: Final = f"{MOUNT_PATH}/{ZIPAPP_NAME}"
INSTALL_COMMAND: Final = "vllm-preflight-install"

# Identity of the operator towards the API: field manager, Event source.
COMPONENT: Final = "vllm-preflight"
# The coordination.k8s.io Lease the replicas elect their leader with (writegate.py).
LEASE_NAME: Final = "vllm-preflight"

# Webhook paths: kopf serves each admission handler at /<handler id>.
VALIDATE_WEBHOOK_ID: Final = "validate"
MUTATE_PODS_WEBHOOK_ID: Final = "mutate-pods"
# The same validation, through the entry with failurePolicy Fail that covers exactly the
# namespaces under Enforce (runtime/failclosedsync.py): its answers by the deadline refuse.
VALIDATE_ENFORCE_WEBHOOK_ID: Final = "validate-enforce"
# Guards the injected pods' provenance annotation (provenance.py): every namespace but the
# excluded ones, every pod labelled injected.
PROVENANCE_WEBHOOK_ID: Final = "validate-provenance"

GPU_RESOURCE: Final = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX: Final = "nvidia.com/mig-"

# Namespaces never touched whatever their labels say (the release namespace is added at start).
SYSTEM_NAMESPACES: Final = frozenset({"kube-system", "kube-public", "kube-node-lease"})
