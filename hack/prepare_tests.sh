#!/usr/bin/env bash
# Everything the test suite needs that can be built or installed, prepared before pytest
# starts and outside any test's timeout (issue 40, item 7): `make test` runs this, and
# `.ci/run` adds nothing to `make test`. A newcomer's `make test` and CI's are the same run.
#
#   - the control plane (etcd, kube-apiserver, controller-manager, scheduler, kubectl, helm),
#     the chart's tools (promtool, helm-docs), the real node's kubelet and pause, the next
#     Kubernetes (the Workload API tests), the OCI registry (the release tests), helm alone
#     (make release-artifacts) and krew (the install-path e2e), all
#     built from the pinned Go modules in hack/k8s into ~/.cache/vllm-preflight (cached:
#     a second run builds nothing);
#   - the source of every pinned vLLM release (its PyPI sdist's .py files, into the same
#     cache), which the drift tests regenerate the generated tables from;
#   - torch, in a virtualenv of its own in the same cache, for the gloo all-reduce test;
#   - as root, with apt-get: buildah, debootstrap and dash (the image build and the shell
#     oracle), containerd, runc and the CNI plugins (the real node), zsh and fish (the
#     completion tests). Best effort: without
#     them, or without root, those tests skip and pytest's summary says why (-ra).
#
# Before this script, `.ci/run` did these steps and `make test` did not: on a fresh clone
# `make test` then built promtool inside a test, under its 300 s timeout, and failed two
# chart tests, while every real-node test and the image build skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
say() { echo "== prepare: $*" >&2; }

apt_install() {  # packages... (best effort, root only)
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    say "not root or no apt-get: not installing $*"
    return 0
  fi
  timeout 600 bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends $* >/dev/null" \
    || say "could not install $* (the tests that need them skip, saying why)"
}

# The image build (tests/unit/test_chart_images.py) and the real shells of the oracle.
if ! command -v buildah >/dev/null || ! command -v debootstrap >/dev/null ||
   ! command -v dash >/dev/null; then
  apt_install buildah debootstrap dash
fi
# The real node (tests/e2e/test_real_node.py, docs/CONTROL_PLANE.md "A real node").
if ! command -v containerd >/dev/null || ! command -v runc >/dev/null ||
   [ ! -x /usr/lib/cni/bridge ]; then
  apt_install containerd runc containernetworking-plugins
fi
say "image tools: $(command -v buildah || echo none) $(command -v debootstrap || echo none)"
say "real node: $(command -v containerd || echo no containerd) $(command -v runc || echo no runc)"

# The vLLM source the generated registry table is compared with (tests/unit/test_model_tables.py):
# the release's sdist from PyPI, pinned by sha256, its .py files only (hack/vllm/fetch_source.py).
t=$SECONDS
registry_version=$(sed -n 's/^VLLM_VERSION = "\(.*\)"$/\1/p' initcontainer/preflight_contract/vllm_registry.py)
say "vLLM $registry_version source: $(python3 hack/vllm/fetch_source.py "$registry_version") ($((SECONDS - t)) s)"
# Every pinned release, for the drift tests of the per-release table
# (tests/unit/test_vllm_versions.py regenerates the whole table from them; hack/vllm/gen_versions.py):
# 65 sdists, 1.08 GB downloaded once and 1.1 GB of .py files kept (84 s the first time,
# measured 2026-12-07 on the loaded 2-core machine; then each is found in the cache). Fetching only some left that test skipped
# on a fresh machine, a skip neither a GPU nor root explains (issue 40 item 7).
t=$SECONDS
versions=$(python3 -c 'import json,sys; print(" ".join(v for v in json.load(open(sys.argv[1])) if not v.startswith("_")))' hack/vllm/sources.json)
for version in $versions; do
  python3 hack/vllm/fetch_source.py "$version" >/dev/null
done
say "vLLM sources of every pinned release for the version table ($((SECONDS - t)) s)"

# torch, in a virtualenv of its own, for the deep tier's gloo all-reduce test
# (tests/fakedriver/test_check_group.py; dev/preflight_dev/testing/torchenv.py): about 3.5 GB
# from PyPI the first time, then a stamp.
t=$SECONDS
say "torch: $("${PY:-.venv/bin/python}" -m preflight_dev.testing.torchenv) ($((SECONDS - t)) s)"

# Shells for tests/unit/test_shell_completion.py (bash is always there).
if ! command -v zsh >/dev/null || ! command -v fish >/dev/null; then
  apt_install zsh fish
fi

for set in controlplane tools node next registry helm krew; do
  t=$SECONDS
  hack/k8s/build.sh "$set" >/dev/null
  say "$set ready ($((SECONDS - t)) s)"
done
say "done in $((SECONDS - t0)) s"
