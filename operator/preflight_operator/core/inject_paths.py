"""The fixed paths and volume names of the injected containers (the injection, core/injection.py).

Shared by the container builders (core/inject_containers.py), which mount them, and the
model mounts (core/inject_models.py), which must never copy one of vLLM's over them.
"""

from __future__ import annotations

SHM_PATH = "/dev/shm"
TERMINATION_MESSAGE_PATH = "/dev/termination-log"
# No API token in the injected containers. The API server's ServiceAccount admission plugin
# adds its token mount to every container of the pod, and runs again after a webhook
# changed the pod (admission reinvocation), so our init containers would get it too. The
# Pod API has no per-container opt-out (automountServiceAccountToken is pod-wide, and
# vLLM's container may need the token); the plugin skips a container that already mounts
# something at this path (kubernetes v1.34.4 plugin/pkg/admission/serviceaccount/
# admission.go, mountServiceAccountToken). So each injected container mounts an empty,
# read-only emptyDir there: the path exists, and holds no token.
TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
NO_TOKEN_VOLUME = "preflight-no-token"
