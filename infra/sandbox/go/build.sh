#!/usr/bin/env bash
# Builds the sandbox's control-plane binaries from the committed wrapper modules into a
# cache outside the repo, and prints the directory that holds them.
#
# The cache key is a hash of every go.mod/go.sum here and of this script, so binaries are
# rebuilt exactly when a pin (or the way they are built) changes, and reused otherwise.
# Go's own module and build caches (GOMODCACHE, GOCACHE) are reused too.
#   OUTPOST_CACHE   cache root (default: $XDG_CACHE_HOME/outpost or ~/.cache/outpost)
# Build output goes to <bindir>/build.log; on failure its tail is printed to stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC1091
source "$here/versions.env"
cache_root=${OUTPOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/outpost}
key=$(cd "$here" && cat versions.env build.sh kube/go.mod kube/go.sum etcd/go.mod etcd/go.sum kwok/go.mod kwok/go.sum | sha256sum | cut -c1-16)
bindir="$cache_root/bin/$key"
binaries=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok kwokctl)

complete() { local b; for b in "${binaries[@]}"; do [ -x "$bindir/$b" ] || return 1; done; [ -f "$bindir/.complete" ]; }
if complete; then echo "$bindir"; exit 0; fi

mkdir -p "$bindir"
log="$bindir/build.log"
: > "$log"
export GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0
kube_minor=${KUBERNETES_VERSION#v1.}; kube_minor=${kube_minor%%.*}
build_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
kube_ldflags="-s -w"
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  kube_ldflags+=" -X '$pkg.gitVersion=${KUBERNETES_VERSION}' -X '$pkg.gitMajor=1' -X '$pkg.gitMinor=${kube_minor}'"
  kube_ldflags+=" -X '$pkg.gitTreeState=clean' -X '$pkg.buildDate=${build_date}'"
done
kwok_ldflags="-s -w -X 'sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION}'"

build() { # module-dir output-name package ldflags
  local dir=$1 out=$2 pkg=$3 ldflags=$4 start=$SECONDS
  echo "== building $out ($pkg)" >> "$log"
  if ! (cd "$here/$dir" && go build -trimpath -ldflags "$ldflags" -o "$bindir/$out.tmp" "$pkg") >> "$log" 2>&1; then
    echo "build.sh: building $out failed; last lines of $log:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
  mv "$bindir/$out.tmp" "$bindir/$out"
  echo "== built $out in $((SECONDS - start)) s" >> "$log"
}

build etcd etcd . "-s -w"
build kube kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$kube_ldflags"
build kube kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$kube_ldflags"
build kube kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler "$kube_ldflags"
build kube kubectl k8s.io/kubernetes/cmd/kubectl "$kube_ldflags"
build kwok kwok sigs.k8s.io/kwok/cmd/kwok "$kwok_ldflags"
build kwok kwokctl sigs.k8s.io/kwok/cmd/kwokctl "$kwok_ldflags"
touch "$bindir/.complete"
echo "$bindir"
