#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager, kubectl and helm from the pinned
# Go modules in this folder, into a cache outside the repository:
#   ${VLLM_PREFLIGHT_CACHE:-~/.cache/vllm-preflight}/k8s-<key>/bin
# <key> hashes every pin (versions.env, both go.mod/go.sum pairs, the Go version), so the
# binaries are rebuilt only when a pin changes. Prints the bin directory on stdout last;
# progress goes to stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=/dev/null
. "$here/versions.env"
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false

key=$( (cat "$here/versions.env" "$here/go.mod" "$here/go.sum" "$here/helm/go.mod" \
         "$here/helm/go.sum" "$here/etcd/main.go"; go version) | sha256sum | cut -c1-16)
cache=${VLLM_PREFLIGHT_CACHE:-$HOME/.cache/vllm-preflight}
dest="$cache/k8s-$KUBERNETES_VERSION-$key"
bins=(etcd kube-apiserver kube-controller-manager kubectl helm)

complete() { for b in "${bins[@]}"; do [ -x "$dest/bin/$b" ] || return 1; done; }
if complete; then echo "$dest/bin"; exit 0; fi

mkdir -p "$cache"
# One build at a time per cache: a second caller waits and then finds the binaries.
exec 9>"$cache/.build.lock"
flock 9
if complete; then echo "$dest/bin"; exit 0; fi

major=${KUBERNETES_VERSION#v}; major=${major%%.*}
minor=${KUBERNETES_VERSION#v*.}; minor=${minor%%.*}
vpkg=k8s.io/component-base/version
kver="-X $vpkg.gitVersion=$KUBERNETES_VERSION -X $vpkg.gitMajor=$major -X $vpkg.gitMinor=$minor"
kver="$kver -X $vpkg.gitTreeState=clean -X $vpkg.buildDate=1970-01-01T00:00:00Z"
kver="$kver -X k8s.io/client-go/pkg/version.gitVersion=$KUBERNETES_VERSION"
hver="-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"

mkdir -p "$dest/bin.partial"
step() {  # name, module dir, package, ldflags
  local name=$1 dir=$2 pkg=$3 ld=$4 t0=$SECONDS
  if [ -x "$dest/bin.partial/$name" ]; then return; fi
  echo ">>> building $name ($pkg) ..." >&2
  (cd "$dir" && go build -trimpath -ldflags "-s -w $ld" -o "$dest/bin.partial/$name.tmp" "$pkg")
  mv "$dest/bin.partial/$name.tmp" "$dest/bin.partial/$name"
  echo ">>> built $name in $((SECONDS - t0)) s" >&2
}
t_all=$SECONDS
echo ">>> first build of the local control plane into $dest (about 10-30 minutes on 2 cores; cached afterwards)" >&2
step etcd "$here" ./etcd ""
step kube-apiserver "$here" k8s.io/kubernetes/cmd/kube-apiserver "$kver"
step kube-controller-manager "$here" k8s.io/kubernetes/cmd/kube-controller-manager "$kver"
step kubectl "$here" k8s.io/kubernetes/cmd/kubectl "$kver"
step helm "$here/helm" helm.sh/helm/v3/cmd/helm "$hver"
rm -rf "$dest/bin"
mv "$dest/bin.partial" "$dest/bin"
echo ">>> control plane binaries ready in $((SECONDS - t_all)) s" >&2
echo "$dest/bin"
