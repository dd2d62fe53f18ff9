#!/usr/bin/env bash
# Builds binaries from the pinned Go modules in this folder, into a cache outside the
# repository. Two sets, each with its own cache directory:
#   build.sh [controlplane]  etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
#                            kubectl, helm
#     -> ${VLLM_PREFLIGHT_CACHE:-~/.cache/vllm-preflight}/k8s-<version>-<key>/bin
#   build.sh next            the same set at KUBERNETES_NEXT_VERSION (module next/; etcd
#                            from that module too, helm as above), which serves the
#                            Workload API (docs/CONTROL_PLANE.md "The next control plane")
#     -> ${VLLM_PREFLIGHT_CACHE:-~/.cache/vllm-preflight}/k8s-<next version>-<key>/bin
#   build.sh tools           promtool, helm-docs (only the chart's tests need them)
#     -> ${VLLM_PREFLIGHT_CACHE:-~/.cache/vllm-preflight}/tools-<key>/bin
#   build.sh node            kubelet and kube-proxy (same module and stamps as the control
#                            plane), pause, our sandbox process, and CoreDNS (its own
#                            module, coredns/: the plugins the node's cluster DNS uses);
#                            only the real node needs them
#     -> ${VLLM_PREFLIGHT_CACHE:-~/.cache/vllm-preflight}/node-<version>-<key>/bin
#   build.sh helm            helm alone (the same build as the control plane's): what
#                            `make release-artifacts` needs to package the chart, without
#                            building a control plane first
#     -> ${VLLM_PREFLIGHT_CACHE:-~/.cache/vllm-preflight}/helm-<version>-<key>/bin
#   build.sh krew            krew, the kubectl plugin manager (sigs.k8s.io/krew, pinned by
#                            krew/go.mod alone), for the install-path e2e
#     -> ${VLLM_PREFLIGHT_CACHE:-~/.cache/vllm-preflight}/krew-<version>-<key>/bin
#   build.sh registry        registry, the CNCF distribution registry (its registry
#                            package with the filesystem driver: registry/main.go), a
#                            local OCI registry for the release e2e (docs/RELEASE.md)
#     -> ${VLLM_PREFLIGHT_CACHE:-~/.cache/vllm-preflight}/registry-<version>-<key>/bin
#                            Its pin is registry/go.mod alone, not versions.env, so that
#                            bumping it never changes the other sets' keys.
# <key> hashes every input that changes what the set's binaries are (versions.env, the
# set's go.mod/go.sum pairs, etcd/main.go, the link flags, the build tags and the Go
# version), so binaries are rebuilt only when one of them changes; not where the checkout
# lies (the steps' module folders are hashed relative to hack/k8s: before, every clone at
# another path, CI's and the tests' own included, rebuilt every set). Prints the bin directory
# on stdout last; progress goes to stderr. Measured cold builds on 2 cores: about 6.5
# minutes for the control plane, and the tools separately (docs/CONTROL_PLANE.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=/dev/null
. "$here/versions.env"
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
target=${1:-controlplane}
# --cached: print the set's directory if it is built, else exit 3 without building (tests
# that only run where a set is already built ask this way).
cached_only=${2:-}
case $target/$cached_only in
  controlplane/ | next/ | tools/ | node/ | registry/ | helm/ | krew/) ;;
  controlplane/--cached | next/--cached | tools/--cached | node/--cached | registry/--cached) ;;
  helm/--cached | krew/--cached) ;;
  *) echo "usage: hack/k8s/build.sh [controlplane|next|tools|node|registry|helm|krew]" \
          "[--cached]" >&2; exit 2 ;;
esac

if ! command -v go >/dev/null; then
  echo "hack/k8s/build.sh: 'go' is not on PATH; install Go (see hack/k8s/go.mod for the" \
       "minimum version) or point VLLM_PREFLIGHT_K8S_BIN at a directory holding" \
       "etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and helm" >&2
  exit 2
fi

# The go.mod files must match versions.env (the link flags below stamp versions.env's
# numbers onto whatever go.mod builds).
requires() {  # go.mod, module, version
  grep -Eq "^(require)?[[:space:]]+${2//./\\.} ${3//./\\.}\$" "$1"
}
if ! requires "$here/go.mod" k8s.io/kubernetes "$KUBERNETES_VERSION" ||
   ! grep -Eq "=> k8s\.io/api $STAGING_VERSION\$" "$here/go.mod" ||
   ! requires "$here/next/go.mod" k8s.io/kubernetes "$KUBERNETES_NEXT_VERSION" ||
   ! grep -Eq "=> k8s\.io/api $STAGING_NEXT_VERSION\$" "$here/next/go.mod" ||
   ! requires "$here/helm/go.mod" helm.sh/helm/v3 "$HELM_VERSION" ||
   ! requires "$here/promtool/go.mod" github.com/prometheus/prometheus \
       "$PROMETHEUS_MODULE_VERSION" ||
   ! requires "$here/helm-docs/go.mod" github.com/norwoodj/helm-docs "$HELM_DOCS_VERSION"; then
  echo "hack/k8s/build.sh: go.mod files do not match versions.env; run hack/k8s/gen-gomod.sh" >&2
  exit 2
fi

cache=${VLLM_PREFLIGHT_CACHE:-$HOME/.cache/vllm-preflight}
steps=()  # "name|module dir|package|ldflags|tags"
# The Kubernetes module this target builds from, and its version.
kdir=$here kversion=$KUBERNETES_VERSION
if [ "$target" = next ]; then kdir=$here/next kversion=$KUBERNETES_NEXT_VERSION; fi
if [ "$target" = controlplane ] || [ "$target" = node ] || [ "$target" = next ]; then
  # Version stamps: without them /version and `kubectl version` say v0.0.0-master.
  major=${kversion#v}; major=${major%%.*}
  minor=${kversion#v*.}; minor=${minor%%.*}
  vpkg=k8s.io/component-base/version
  kver="-X $vpkg.gitVersion=$kversion -X $vpkg.gitMajor=$major -X $vpkg.gitMinor=$minor"
  kver="$kver -X $vpkg.gitTreeState=clean -X $vpkg.buildDate=1970-01-01T00:00:00Z"
  kver="$kver -X k8s.io/client-go/pkg/version.gitVersion=$kversion"
fi
if [ "$target" = node ]; then
  inputs=("$here/go.mod" "$here/go.sum" "$here/pause/main.go" "$here/coredns/go.mod"
          "$here/coredns/go.sum" "$here/coredns/main.go")
  dest="$cache/node-$KUBERNETES_VERSION"
  steps=("kubelet|$here|k8s.io/kubernetes/cmd/kubelet|$kver|"
         "kube-proxy|$here|k8s.io/kubernetes/cmd/kube-proxy|$kver|"
         "pause|$here|./pause||"
         "coredns|$here/coredns|.||")
  what="the real node's kubelet, kube-proxy and CoreDNS (about 6 minutes on 2 cores after the control plane"
elif [ "$target" = registry ]; then
  # distribution's release build (its Makefile) stamps version/version.go's variables;
  # without them `registry --version` says "v3.x.y+unknown".
  rmod=github.com/distribution/distribution/v3
  rversion=$(awk -v m="$rmod" '$1 == m {print $2; exit}' "$here/registry/go.mod")
  rversion=${rversion:-$(awk -v m="$rmod" '$1 == "require" && $2 == m {print $3; exit}' \
    "$here/registry/go.mod")}
  if [ -z "$rversion" ]; then
    echo "hack/k8s/build.sh: $here/registry/go.mod does not require $rmod" >&2
    exit 2
  fi
  rver="-X $rmod/version.version=$rversion -X $rmod/version.mainpkg=$rmod"
  inputs=("$here/registry/go.mod" "$here/registry/go.sum" "$here/registry/main.go")
  dest="$cache/registry-$rversion"
  steps=("registry|$here/registry|.|$rver|")
  what="the OCI registry (about 2 minutes on 2 cores the first time"
elif [ "$target" = krew ]; then
  # krew's release build (hack/make-binaries.sh) stamps internal/version's gitTag.
  kmod=sigs.k8s.io/krew
  krversion=$(awk -v m="$kmod" '$1 == "require" && $2 == m {print $3; exit}' "$here/krew/go.mod")
  if [ -z "$krversion" ]; then
    echo "hack/k8s/build.sh: $here/krew/go.mod does not require $kmod" >&2
    exit 2
  fi
  inputs=("$here/krew/go.mod" "$here/krew/go.sum")
  dest="$cache/krew-$krversion"
  steps=("krew|$here/krew|$kmod/cmd/krew|-X $kmod/internal/version.gitTag=$krversion|")
  what="krew (about a minute on 2 cores the first time"
elif [ "$target" = controlplane ] || [ "$target" = next ] || [ "$target" = helm ]; then
  # helm's own release build (its Makefile) also stamps the Kubernetes version that
  # `helm template`/`helm lint` assume without a cluster or --kube-version: client-go's
  # v0.X.Y in helm's module becomes 1.X. Without it helm assumes v1.20.0 and refuses any
  # chart with a newer kubeVersion.
  hcg=$(awk '$1 == "k8s.io/client-go" {print $2; exit}' "$here/helm/go.mod")
  hcg=${hcg#v}
  hmajor=$(( ${hcg%%.*} + 1 )); hminor=${hcg#*.}; hminor=${hminor%%.*}
  hver="-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  hver="$hver -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    hver="$hver -X $p.k8sVersionMajor=$hmajor -X $p.k8sVersionMinor=$hminor"
  done
  if [ "$target" = helm ]; then
    inputs=("$here/helm/go.mod" "$here/helm/go.sum")
    dest="$cache/helm-$HELM_VERSION"
    steps=("helm|$here/helm|helm.sh/helm/v3/cmd/helm|$hver|")
    what="helm alone (about 2 minutes on 2 cores the first time"
  else
    inputs=("$kdir/go.mod" "$kdir/go.sum" "$here/helm/go.mod" "$here/helm/go.sum"
            "$kdir/etcd/main.go")
    dest="$cache/k8s-$kversion"
    steps=("etcd|$kdir|./etcd||"
           "kube-apiserver|$kdir|k8s.io/kubernetes/cmd/kube-apiserver|$kver|"
           "kube-controller-manager|$kdir|k8s.io/kubernetes/cmd/kube-controller-manager|$kver|"
           "kube-scheduler|$kdir|k8s.io/kubernetes/cmd/kube-scheduler|$kver|"
           "kubectl|$kdir|k8s.io/kubernetes/cmd/kubectl|$kver|"
           "helm|$here/helm|helm.sh/helm/v3/cmd/helm|$hver|")
    what="the local control plane (about 6-7 minutes on 2 cores the first time"
  fi
else
  # promtool as Prometheus' release build (.promu.yml) stamps it; `remove_all_sd` is
  # Prometheus' own build tag that leaves out the service-discovery plugins (cloud SDKs)
  # that checking rule files never uses.
  ppkg=github.com/prometheus/common/version
  pver="-X $ppkg.Version=$PROMETHEUS_VERSION -X $ppkg.Revision=$PROMETHEUS_MODULE_VERSION"
  pver="$pver -X $ppkg.Branch=HEAD -X $ppkg.BuildUser=vllm-preflight"
  pver="$pver -X $ppkg.BuildDate=19700101-00:00:00"
  # helm-docs' goreleaser build sets main.version (it appears in the README footer).
  dver="-X main.version=${HELM_DOCS_VERSION#v}"
  inputs=("$here/promtool/go.mod" "$here/promtool/go.sum" "$here/helm-docs/go.mod"
          "$here/helm-docs/go.sum")
  dest="$cache/tools"
  steps=("promtool|$here/promtool|github.com/prometheus/prometheus/cmd/promtool|$pver|remove_all_sd"
         "helm-docs|$here/helm-docs|github.com/norwoodj/helm-docs/cmd/helm-docs|$dver|")
  what="promtool and helm-docs (a few minutes the first time"
fi

# The next control plane's pins sit in versions.env's last section, which only its own key
# hashes: moving them rebuilds nothing else.
pins() {
  if [ "$target" = next ]; then cat "$here/versions.env"
  else sed '/^# --- The next control plane/,$d' "$here/versions.env"; fi
}
key=$( (pins; cat "${inputs[@]}"; printf '%s\n' "${steps[@]//"$here"/.}"; go version) |
       sha256sum | cut -c1-16)
dest="$dest-$key"
bins=(); for s in "${steps[@]}"; do bins+=("${s%%|*}"); done

complete() { for b in "${bins[@]}"; do [ -x "$dest/bin/$b" ] || return 1; done; }
if complete; then echo "$dest/bin"; exit 0; fi
if [ -n "$cached_only" ]; then
  echo "hack/k8s/build.sh: the $target set is not built (run hack/k8s/build.sh $target)" >&2
  exit 3
fi

mkdir -p "$cache"
# One build at a time per cache: a second caller waits and then finds the binaries.
exec 9>"$cache/.build.lock"
if ! flock -n 9; then
  echo ">>> another build in $cache is running; waiting for it ..." >&2
  flock 9
fi
if complete; then echo "$dest/bin"; exit 0; fi

mkdir -p "$dest/bin.partial"
step() {  # name, module dir, package, ldflags, build tags
  local name=$1 dir=$2 pkg=$3 ld=$4 tags=$5 t0=$SECONDS
  if [ -x "$dest/bin.partial/$name" ]; then return; fi
  echo ">>> building $name ($pkg) ..." >&2
  # go inherits fd 9, so a build orphaned by a killed caller keeps the lock until it ends
  # and never races a second one on the same output.
  (cd "$dir" && go build -trimpath -tags "$tags" -ldflags "-s -w $ld" \
     -o "$dest/bin.partial/$name.tmp" "$pkg")
  mv "$dest/bin.partial/$name.tmp" "$dest/bin.partial/$name"
  echo ">>> built $name in $((SECONDS - t0)) s" >&2
}
t_all=$SECONDS
echo ">>> building $what; cached afterwards) into $dest" >&2
for s in "${steps[@]}"; do
  IFS='|' read -r name dir pkg ld tags <<<"$s"
  step "$name" "$dir" "$pkg" "$ld" "$tags"
done
rm -rf "$dest/bin"
mv "$dest/bin.partial" "$dest/bin"
echo ">>> $target binaries ready in $((SECONDS - t_all)) s" >&2
echo "$dest/bin"
