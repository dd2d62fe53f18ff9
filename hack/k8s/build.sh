#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager, kubectl and helm from the pinned
# Go modules in this folder, into a cache outside the repository:
#   ${VLLM_PREFLIGHT_CACHE:-~/.cache/vllm-preflight}/k8s-<version>-<key>/bin
# <key> hashes every input that changes what the binaries are (versions.env, both
# go.mod/go.sum pairs, etcd/main.go, the link flags and the Go version), so the binaries
# are rebuilt only when one of them changes. Prints the bin directory on stdout last;
# progress goes to stderr. Measured cold build: about 6.5 minutes on 2 cores
# (docs/CONTROL_PLANE.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=/dev/null
. "$here/versions.env"
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false

if ! command -v go >/dev/null; then
  echo "hack/k8s/build.sh: 'go' is not on PATH; install Go (see hack/k8s/go.mod for the" \
       "minimum version) or point VLLM_PREFLIGHT_K8S_BIN at a directory holding" \
       "etcd, kube-apiserver, kube-controller-manager, kubectl and helm" >&2
  exit 2
fi

# The go.mod files must match versions.env (the link flags below stamp versions.env's
# numbers onto whatever go.mod builds).
if ! grep -Eq "^(require)?[[:space:]]+k8s\.io/kubernetes $KUBERNETES_VERSION\$" "$here/go.mod" ||
   ! grep -Eq "=> k8s\.io/api $STAGING_VERSION\$" "$here/go.mod" ||
   ! grep -Eq "^(require)?[[:space:]]+helm\.sh/helm/v3 $HELM_VERSION\$" "$here/helm/go.mod"; then
  echo "hack/k8s/build.sh: go.mod files do not match versions.env; run hack/k8s/gen-gomod.sh" >&2
  exit 2
fi

# Version stamps: without them /version and `kubectl version` say v0.0.0-master.
major=${KUBERNETES_VERSION#v}; major=${major%%.*}
minor=${KUBERNETES_VERSION#v*.}; minor=${minor%%.*}
vpkg=k8s.io/component-base/version
kver="-X $vpkg.gitVersion=$KUBERNETES_VERSION -X $vpkg.gitMajor=$major -X $vpkg.gitMinor=$minor"
kver="$kver -X $vpkg.gitTreeState=clean -X $vpkg.buildDate=1970-01-01T00:00:00Z"
kver="$kver -X k8s.io/client-go/pkg/version.gitVersion=$KUBERNETES_VERSION"
hver="-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"

key=$( (cat "$here/versions.env" "$here/go.mod" "$here/go.sum" "$here/helm/go.mod" \
         "$here/helm/go.sum" "$here/etcd/main.go"; echo "$kver" "$hver"; go version) |
       sha256sum | cut -c1-16)
cache=${VLLM_PREFLIGHT_CACHE:-$HOME/.cache/vllm-preflight}
dest="$cache/k8s-$KUBERNETES_VERSION-$key"
bins=(etcd kube-apiserver kube-controller-manager kubectl helm)

complete() { for b in "${bins[@]}"; do [ -x "$dest/bin/$b" ] || return 1; done; }
if complete; then echo "$dest/bin"; exit 0; fi

mkdir -p "$cache"
# One build at a time per cache: a second caller waits and then finds the binaries.
exec 9>"$cache/.build.lock"
if ! flock -n 9; then
  echo ">>> another build of the control plane is running; waiting for it ..." >&2
  flock 9
fi
if complete; then echo "$dest/bin"; exit 0; fi

mkdir -p "$dest/bin.partial"
step() {  # name, module dir, package, ldflags
  local name=$1 dir=$2 pkg=$3 ld=$4 t0=$SECONDS
  if [ -x "$dest/bin.partial/$name" ]; then return; fi
  echo ">>> building $name ($pkg) ..." >&2
  # go inherits fd 9, so a build orphaned by a killed caller keeps the lock until it ends
  # and never races a second one on the same output.
  (cd "$dir" && go build -trimpath -ldflags "-s -w $ld" -o "$dest/bin.partial/$name.tmp" "$pkg")
  mv "$dest/bin.partial/$name.tmp" "$dest/bin.partial/$name"
  echo ">>> built $name in $((SECONDS - t0)) s" >&2
}
t_all=$SECONDS
echo ">>> building the local control plane into $dest" \
     "(about 6-7 minutes on 2 cores the first time; cached afterwards)" >&2
step etcd "$here" ./etcd ""
step kube-apiserver "$here" k8s.io/kubernetes/cmd/kube-apiserver "$kver"
step kube-controller-manager "$here" k8s.io/kubernetes/cmd/kube-controller-manager "$kver"
step kubectl "$here" k8s.io/kubernetes/cmd/kubectl "$kver"
step helm "$here/helm" helm.sh/helm/v3/cmd/helm "$hver"
rm -rf "$dest/bin"
mv "$dest/bin.partial" "$dest/bin"
echo ">>> control plane binaries ready in $((SECONDS - t_all)) s" >&2
echo "$dest/bin"
