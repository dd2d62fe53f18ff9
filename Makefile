# vllm-preflight: the entry points (docs/ARCHITECTURE.md, "Entry points").
#   make demo     the whole flow on a local control plane (no cluster needed)
#   make test     lint, types, unit, fake-driver and e2e tests (GPU tests skip without a driver)
#   make cluster  the local control plane in the foreground; prints its kubeconfig path
#                 (with a real node where the machine allows; NODE=no leaves it out)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: all demo test cluster lint typecheck unit e2e gpu zipapp controlplane prepare venv clean bench-webhook bench-operator reliability

all: test

# The product editable with its dev extra, then the development harness (dev/preflight_dev:
# control plane, demo, fake driver; never shipped) as a distribution of its own.
$(STAMP): pyproject.toml dev/pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	$(PY) -m pip install -q --no-deps -e ./dev
	touch $(STAMP)

venv: $(STAMP)

# Builds (once, cached under ~/.cache/vllm-preflight) etcd, kube-apiserver,
# kube-controller-manager, kubectl and helm from the pinned Go modules in hack/k8s.
controlplane:
	hack/k8s/build.sh >/dev/null

# Everything the whole suite needs, before pytest and outside any test's timeout: every
# binary set of hack/k8s (control plane, chart tools, kubelet, the next control plane, the
# registry) and, as root, the Debian packages of the image and real-node tests
# (hack/prepare_tests.sh says which and why). `make test` runs it; .ci/run adds nothing.
prepare:
	hack/prepare_tests.sh

lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(VENV)/bin/lint-imports
	$(PY) hack/gen_chart_kinds.py --check
	$(PY) hack/gen_rule_docs.py --check

typecheck: venv
	$(PY) -m mypy

unit: venv controlplane
	$(PY) -m pytest -m "not e2e and not gpu"

e2e: venv controlplane
	$(PY) -m pytest -m e2e

gpu: venv
	$(PY) -m pytest -m gpu tests/gpu --noconftest

test: venv prepare lint typecheck
	$(PY) -m pytest

zipapp: venv
	$(PY) hack/build_zipapp.py --output dist/vllm-preflight.pyz

demo: venv controlplane
	$(PY) -m preflight_dev.demo

NODE ?= auto
cluster: venv controlplane
	$(PY) -m preflight_dev.testing.cluster --node=$(NODE)

# Benchmarks against floors measured in the same run (docs/PERFORMANCE.md).
bench-webhook: venv controlplane
	$(PY) hack/bench/webhook_latency.py

bench-operator: venv controlplane
	$(PY) hack/bench/operator_scale.py

# The reliability suite (docs/RELIABILITY.md): hostile inputs through lint, the rules
# engine and check; the webhook port under attack (floods, slow peers, overload); then
# the tenant-bounds e2e (issue 34: big objects, a deleted bare pod, an owner named ../);
# operator churn when hack/reliability/churn.py is there.
reliability: venv controlplane
	$(PY) hack/reliability/inputs.py
	$(PY) hack/reliability/integrity.py
	$(PY) hack/reliability/webhook_port.py
	$(PY) hack/reliability/loopstall.py
	$(PY) -m pytest -q tests/e2e/test_tenant_bounds.py
	# issue 34, load: 2 peers x 256 idle connections, a 400-review flood on a loaded host
	$(PY) -m pytest -q tests/e2e/test_enforce_under_load.py
	# issue 34 items 6-7: who reads the webhook port, terminals, Warn/Audit never block
	$(PY) -m pytest -q tests/e2e/test_webhook_caller.py tests/unit/test_terminal_output.py \
		tests/unit/test_warn_never_blocks.py tests/e2e/test_warn_never_blocks_in_pods.py \
		tests/unit/test_shell_forms.py \
		tests/e2e/test_kubectl_plugin.py
	# issue 36 item 2: known secrets (URL userinfo, a secretKeyRef value, a token header) through
	# every output channel, grepped for; credentials never follow a redirect to another host
	$(PY) -m pytest -q tests/unit/test_no_secret_leaves.py tests/unit/test_redact.py \
		tests/e2e/test_secrets_never_written.py
	# issue 36 item 3: broken vLLM behind each launcher under Enforce: denied or checked
	$(PY) -m pytest -q tests/e2e/test_launchers_admission.py tests/unit/test_shell_launchers.py
	if [ -f hack/reliability/churn.py ]; then $(PY) hack/reliability/churn.py; fi
	# issue 36 item 1: an impostor at a group's rendezvous port never makes a broken group
	# pass; the GPUValidation names the unmatched member (~50 s)
	$(PY) -m pytest -q tests/e2e/test_group_impostor.py tests/unit/test_check_group_impostor.py \
		tests/unit/test_group_proof.py
	# issue 34, node feedback: a tenant's report changes a node only on the operator's probe;
	# no tenant's reuse records evict another's (one and two replicas)
	$(PY) -m pytest -q tests/e2e/test_node_feedback.py tests/e2e/test_node_probe_ha.py \
		tests/e2e/test_deep_tier_reuse.py -k "probe or evict"
	# issue 34, provenance: the label-later pod, a tenant's ReplicaSet or StatefulSet named
	# after the victim, a pods/status write (two replicas, failing open)
	$(PY) -m pytest -q tests/e2e/test_operator_provenance.py

clean:
	rm -rf dist build .mypy_cache .ruff_cache .pytest_cache

# Release artifacts into dist/ (docs/RELEASE.md), everything a doc points at, for the
# version in pyproject.toml: the wheel and the sdist (built from the files git tracks, the
# wheel from the sdist; both with LICENSE), the checker zipapp, the Krew archives (with
# LICENSE) and the manifest naming them by sha256, the chart with the image digests in its
# default values, signed (Helm provenance) and verified, the wheel's CycloneDX SBOM (purl,
# hashes), SHA256SUMS. It builds helm alone (hack/k8s/build.sh helm), never the control
# plane. Without KEY/KEYRING it signs with a throwaway test key (dist/test-key/).
#   make release-artifacts IMAGE_DIGEST=sha256:... CHECK_IMAGE_DIGEST=sha256:... \
#        KEY="Release Key" KEYRING=~/.gnupg/secring.gpg PUBRING=~/.gnupg/pubring.gpg
# IMAGE_REGISTRY=127.0.0.1:5000 also builds the operator image on a stand-in base (root,
# buildah, debootstrap), pushes it signed over plain HTTP, verifies it, writes its SBOM
# and records its digest (docs/RELEASE.md, "The image").
# `make release` (hack/release.sh) does the same from a clean clone of HEAD, verifies
# SHA256SUMS and prints the tag command; `hack/release.sh --tag` makes the tag.
.PHONY: release-artifacts release
release-artifacts: venv
	rm -rf dist
	$(PY) hack/release/artifacts.py --out dist \
	  $(if $(IMAGE_DIGEST),--image-digest '$(IMAGE_DIGEST)') \
	  $(if $(CHECK_IMAGE_DIGEST),--check-image-digest '$(CHECK_IMAGE_DIGEST)') \
	  $(if $(KEY),--key '$(KEY)' --keyring '$(KEYRING)') \
	  $(if $(PUBRING),--pubring '$(PUBRING)') \
	  $(if $(IMAGE_REGISTRY),--image-registry '$(IMAGE_REGISTRY)')

release: venv
	PY=$(abspath $(PY)) hack/release.sh
