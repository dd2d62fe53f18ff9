# syntax=docker/dockerfile:1
# vllm-preflight container images (docs/INSTALL.md, "Images"). Build from the repository root:
#
#   docker build --target operator -t ghcr.io/vllm-preflight/operator:0.1.0 .
#   docker build --target check    -t ghcr.io/vllm-preflight/check:0.1.0 .
#
# operator  the operator and webhooks (`vllm-preflight operator`), and the installer of the
#           injected `preflight-install` init container (`vllm-preflight-install`), which copies
#           the checker zipapp held at /opt/vllm-preflight/vllm-preflight.pyz. Slim Python, no
#           torch, no compilers, non-root.
# check     the standalone checker for vLLM images without python3 (injection mode
#           DedicatedImage): PyTorch + CUDA runtime, nvidia-ml-py and the same zipapp.
#
# Bases are pinned to exact tags; pin digests for releases with
#   --build-arg PYTHON_IMAGE=python:3.12.8-slim-bookworm@sha256:<digest>

ARG PYTHON_IMAGE=python:3.12.8-slim-bookworm
ARG CHECK_BASE_IMAGE=pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime

# ---- build: the project and its dependencies in a venv, the checker zipapp -----------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
# Dependencies first (exact versions from constraints.txt), so that code changes reuse them.
COPY constraints.txt ./
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir -c constraints.txt \
      kopf nvidia-ml-py PyYAML prometheus-client aiohttp
COPY pyproject.toml README.md ./
COPY initcontainer/ initcontainer/
COPY operator/ operator/
COPY hack/build_zipapp.py hack/
RUN /opt/venv/bin/pip install --no-cache-dir --no-deps . \
 && /opt/venv/bin/python hack/build_zipapp.py --output /out/vllm-preflight.pyz \
 && /opt/venv/bin/pip install --no-cache-dir --no-deps --target /out/nvml -c constraints.txt nvidia-ml-py

# ---- operator ------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS operator
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="vllm-preflight operator" \
      org.opencontainers.image.description="Kubernetes operator and admission webhooks that validate GPUs before vLLM starts; also the preflight-install image." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/vllm-preflight/vllm-preflight"
# A named user for uid 65532: kopf's peer identity falls back to getpass.getuser().
RUN groupadd --gid 65532 vllm-preflight \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /tmp \
      --shell /usr/sbin/nologin vllm-preflight
COPY --from=build /opt/venv /opt/venv
COPY --from=build /out/vllm-preflight.pyz /opt/vllm-preflight/vllm-preflight.pyz
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    VLLM_PREFLIGHT_ZIPAPP=/opt/vllm-preflight/vllm-preflight.pyz
USER 65532:65532
WORKDIR /tmp
EXPOSE 9443 8080 8081
ENTRYPOINT ["vllm-preflight"]
CMD ["operator"]

# ---- check ---------------------------------------------------------------------------------
FROM ${CHECK_BASE_IMAGE} AS check
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="vllm-preflight check" \
      org.opencontainers.image.description="Standalone GPU preflight checker (PyTorch, CUDA runtime, nvidia-ml-py) for vLLM images without python3." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/vllm-preflight/vllm-preflight"
COPY --from=build /out/vllm-preflight.pyz /opt/vllm-preflight/vllm-preflight.pyz
# nvidia-ml-py is pure Python: installed in the build stage, no pip run here.
COPY --from=build /out/nvml /opt/vllm-preflight/site-packages
ENV PYTHONPATH=/opt/vllm-preflight/site-packages \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HOME=/tmp \
    VLLM_PREFLIGHT_ZIPAPP=/opt/vllm-preflight/vllm-preflight.pyz
USER 65532:65532
WORKDIR /tmp
ENTRYPOINT ["python3", "/opt/vllm-preflight/vllm-preflight.pyz"]
CMD ["check"]
