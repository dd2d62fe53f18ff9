#!/usr/bin/env bash
# Regenerates charts/vllm-preflight/README.md with the pinned helm-docs (built and cached by
# `hack/k8s/build.sh tools`) from Chart.yaml, values.yaml's `# --` comments and
# README.md.gotmpl. With --check it writes nothing and exits 1 when the README differs.
# [chart dir] defaults to charts/vllm-preflight.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
check=false
if [ "${1:-}" = --check ]; then check=true; shift; fi
chart=$(cd "${1:-$root/charts/vllm-preflight}" && pwd)
bin=${VLLM_PREFLIGHT_TOOLS_BIN:-$("$root/hack/k8s/build.sh" tools)}
args=(--chart-search-root "$chart" --template-files README.md.gotmpl
      --sort-values-order file --log-level error)
if $check; then
  if ! diff -u "$chart/README.md" <("$bin/helm-docs" "${args[@]}" --dry-run); then
    echo "$chart/README.md is out of date: run hack/k8s/chart-readme.sh" >&2
    exit 1
  fi
  exit 0
fi
"$bin/helm-docs" "${args[@]}"
