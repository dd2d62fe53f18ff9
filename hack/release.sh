#!/usr/bin/env bash
# Cuts release v<version> of vllm-preflight, the version being pyproject.toml's
# (docs/RELEASE.md, "Cutting a release"):
#
#   hack/release.sh            check, build every artifact from a clean clone, verify; print
#                              the tag command and the files to upload
#   hack/release.sh --tag      the same, then create the annotated tag v<version> on HEAD
#
# KEY, KEYRING, PUBRING, IMAGE_DIGEST, CHECK_IMAGE_DIGEST are passed on as to
# `make release-artifacts` (without KEY the chart is signed with a throwaway test key:
# never publish that). It refuses, naming the reason, when the work tree has changes,
# when the packages, the chart or CHANGELOG.md disagree with pyproject.toml's version, or
# when the tag exists. Artifacts go to dist/ of this checkout (replaced).
#
# Why a clone: `make release-artifacts` builds from the files git tracks or would track,
# but only a clone of the commit proves that the commit alone builds (nothing generated,
# untracked or ignored in this checkout goes into the release).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
tag_it=no
case ${1:-} in
  --tag) tag_it=yes ;;
  "") ;;
  *) echo "usage: hack/release.sh [--tag]" >&2; exit 2 ;;
esac
py=${PY:-$repo/.venv/bin/python}
if [ ! -x "$py" ]; then
  echo "hack/release.sh: $py is missing; run make venv first" >&2
  exit 2
fi
die() { echo "hack/release.sh: $*" >&2; exit 1; }

version=$("$py" -c 'import sys; sys.path.insert(0, "hack/release"); import dists; print(dists.project_version())')
tag=v$version
problems=$("$py" -c 'import sys; sys.path.insert(0, "hack/release"); import dists; print("\n".join(dists.version_problems()))')
[ -z "$problems" ] || die "the tree is not one version ($version):"$'\n'"$problems"
[ -z "$(git status --porcelain --untracked-files=normal)" ] ||
  die "the work tree has changes (git status): commit or stash them; a release is a commit"
if git rev-parse -q --verify "refs/tags/$tag" >/dev/null; then
  die "tag $tag exists; bump [project] version in pyproject.toml (and the others it names)"
fi
commit=$(git rev-parse HEAD)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q --no-local "$repo" "$work/src"
git -C "$work/src" checkout -q "$commit"
args=(--out "$work/src/dist")
[ -z "${IMAGE_DIGEST:-}" ] || args+=(--image-digest "$IMAGE_DIGEST")
[ -z "${CHECK_IMAGE_DIGEST:-}" ] || args+=(--check-image-digest "$CHECK_IMAGE_DIGEST")
[ -z "${KEY:-}" ] || args+=(--key "$KEY" --keyring "$KEYRING")
[ -z "${PUBRING:-}" ] || args+=(--pubring "$PUBRING")
echo ">>> building $tag from $commit in a clean clone ($work/src)" >&2
(cd "$work/src" && "$py" hack/release/artifacts.py "${args[@]}" >/dev/null)
(cd "$work/src/dist" && sha256sum --quiet -c SHA256SUMS) || die "SHA256SUMS does not verify"
rm -rf "$repo/dist"
cp -a "$work/src/dist" "$repo/dist"

echo ">>> release $tag: the files to upload as the release's assets (dist/):"
(cd "$repo/dist" && sed 's/^[0-9a-f]*  /  /' SHA256SUMS && echo "  SHA256SUMS")
if [ "$tag_it" = yes ]; then
  git tag -a "$tag" -m "vllm-preflight $version" "$commit"
  echo ">>> tagged $tag at $commit; push it with: git push origin $tag"
else
  echo ">>> to tag: git tag -a $tag -m 'vllm-preflight $version' $commit   (or hack/release.sh --tag)"
fi
