"""The development harness of vllm-preflight; never shipped in the wheel or the images.

What is here and who uses it (docs/ARCHITECTURE.md, "Packages"):

- ``testing``: the local control plane (etcd, kube-apiserver, kube-controller-manager built
  by ``make controlplane``) or a cluster named by VLLM_PREFLIGHT_KUBECONFIG; the e2e tests,
  the benchmarks and ``make cluster``.
- ``localsetup``: the chart's CRDs, RBAC and webhook configurations applied to that control
  plane, so the operator runs there as it would in a cluster.
- ``localoperator``: the operator as a child process, the way the chart starts it.
- ``fakekubelet``: a kubelet stand-in that runs admitted pods' init containers (the checker
  over the fake driver) and writes pod status.
- ``demo``: ``make demo`` (``python -m preflight_dev.demo``), the whole flow in seconds.
- ``fakedriver``: the fake NVML/CUDA driver the checker is tested on without GPUs.
- ``hubserver``: a local stand-in for the Hugging Face Hub serving tests/data/models.

It lives apart from the product so that the product cannot import it (import-linter,
pyproject.toml) and so that ``kubernetes`` is a development dependency only.
"""
