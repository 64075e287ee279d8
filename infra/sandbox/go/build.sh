#!/usr/bin/env bash
# Builds the sandbox's binaries into a cache outside the repo, and prints the directory that holds them:
# the control plane (etcd, kube-*, kubectl, kwok) from the committed wrapper modules, and the real
# OpenKruise and Koordinator managers each as the main module of its pinned release zip (versions.env):
# `go mod download` verifies the zip against the checksum database, and building inside the unpacked tree
# keeps the release's own go.mod, go.sum and replace directives (a wrapper module would silently drop them).
# <bindir>/versions.json records which release each manager binary was built from.
#
# The cache key is a hash of every go.mod/go.sum here and of this script, so binaries are
# rebuilt exactly when a pin (or the way they are built) changes, and reused otherwise.
# Go's own module and build caches (GOMODCACHE, GOCACHE) are reused too.
# >>> rie
# The Lambda Runtime Interface Emulator (LAMBDA_RIE_VERSION; the tests run the Lambda bundle behind it) is built
# the same way, as the main module of its verified download, into <cache>/bin/rie-<key>/. Its key hashes only
# the lines between `>>> rie` and `<<< rie` markers in versions.env and in this script, and the key above leaves
# exactly those lines out: a bump of either rebuilds only the emulator, and adding it rebuilt nothing else.
#   build.sh rie    build (or reuse) only the emulator and print its path; `build.sh` builds it too
# <<< rie
#
# patches/<module>@<version>.patch fixes an upstream module we cannot yet take a fixed release of.
# A module directory whose build uses a patched module is built from a copy (under the cache) whose
# go.mod replaces that module with a patched copy of its verified download; the committed go.mod
# and go.sum stay untouched. A patch whose version no longer matches the build fails it.
#   OUTPOST_CACHE   cache root (default: $XDG_CACHE_HOME/outpost or ~/.cache/outpost)
# Build output goes to <bindir>/build.log; on failure its tail is printed to stderr.
#
#   build.sh        build (or reuse) the binaries and print their directory
#   build.sh test   run the wrapper modules' Go tests against exactly what the build compiles,
#                   patched modules included (kwok/cel_concurrency_test.go guards the easycel patch)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC1091
source "$here/versions.env"
cache_root=${OUTPOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/outpost}
patches=$(cd "$here" && if [ -d patches ]; then find patches -name '*.patch' | sort; fi)
# shellcheck disable=SC2086 # one path per line, no spaces
key=$(cd "$here" && cat versions.env build.sh kube/go.mod kube/go.sum etcd/go.mod etcd/go.sum kwok/go.mod kwok/go.sum $patches \
  | sha256sum | cut -c1-16)
# >>> rie
# The key again, without the emulator's lines (see the header).
without_rie() { sed '/^# >>> rie/,/^# <<< rie/d' "$@"; }
only_rie() { sed -n '/^# >>> rie/,/^# <<< rie/p' "$@"; }
# shellcheck disable=SC2086 # one path per line, no spaces
key=$(cd "$here" && { without_rie versions.env build.sh; cat kube/go.mod kube/go.sum etcd/go.mod etcd/go.sum \
  kwok/go.mod kwok/go.sum $patches; } | sha256sum | cut -c1-16)
rie_dir="$cache_root/bin/rie-$(cd "$here" && only_rie versions.env build.sh | sha256sum | cut -c1-16)"
rie="$rie_dir/aws-lambda-rie"
build_rie() { # the emulator as the main module of its verified download (its own go.mod and go.sum hold)
  local module=github.com/aws/aws-lambda-runtime-interface-emulator dir src log
  [ -x "$rie" ] && return 0
  mkdir -p "$rie_dir"
  log="$rie_dir/build.log"
  src="$rie_dir/src"
  { dir=$(go mod download -json "$module@$LAMBDA_RIE_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])') \
    && rm -rf "$src" && cp -r "$dir" "$src" && chmod -R u+w "$src" \
    && (cd "$src" && GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0 \
        go build -trimpath -ldflags "-s -w" -o "$rie.tmp" ./cmd/aws-lambda-rie); } > "$log" 2>&1 || {
    echo "build.sh: building aws-lambda-rie ($module@$LAMBDA_RIE_VERSION) failed; last lines of $log:" >&2
    tail -n 40 "$log" >&2
    exit 1
  }
  rm -rf "$src"
  mv "$rie.tmp" "$rie"
}
if [ "${1:-}" = rie ]; then build_rie; echo "$rie"; exit 0; fi
# <<< rie
bindir="$cache_root/bin/$key"
binaries=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok
          kruise-manager kruise-daemon koord-manager koord-scheduler koord-descheduler koordlet)

mode=${1:-build}
case $mode in build | test) ;; *) echo "usage: build.sh [test]" >&2; exit 64 ;; esac

complete() { local b; for b in "${binaries[@]}"; do [ -x "$bindir/$b" ] || return 1; done; [ -f "$bindir/.complete" ]; }
# >>> rie
if [ "$mode" = build ] && complete; then build_rie; fi
# <<< rie
if [ "$mode" = build ] && complete; then echo "$bindir"; exit 0; fi

mkdir -p "$bindir"
log="$bindir/$mode.log"
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

fail() { echo "build.sh: $*" >&2; exit 1; }

declare -A prepared_src=()  # module-dir -> where it builds (a patched copy is made once per module dir)
source_dir() { # module-dir: sets $src to where it builds: itself, or a copy using the patched modules
  local dir=$1 patch rel mod ver used moddir work
  if [ -n "${prepared_src[$dir]:-}" ]; then src=${prepared_src[$dir]}; return; fi
  src="$here/$dir"
  for patch in $patches; do
    rel=${patch#patches/}; rel=${rel%.patch}; mod=${rel%@*}; ver=${rel##*@}
    used=$(cd "$here/$dir" && go list -m -f '{{.Version}}' "$mod" 2>/dev/null) || continue  # not in this build
    [ "$used" = "$ver" ] || fail "$dir now builds $mod $used but $patch is for $ver: re-check it against $used"
    if [ "$src" = "$here/$dir" ]; then
      src="$bindir/src/$dir"
      rm -rf "$src"
      mkdir -p "$src"
      cp "$here/$dir"/go.mod "$here/$dir"/go.sum "$here/$dir"/*.go "$src/"
    fi
    moddir=$(cd "$here/$dir" && go mod download -json "$mod@$ver" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
    work="$bindir/patched/$rel"
    rm -rf "$work"
    mkdir -p "$(dirname "$work")"
    cp -r "$moddir" "$work"
    chmod -R u+w "$work"
    patch --quiet --batch -p1 -d "$work" < "$here/$patch" >> "$log" 2>&1 || fail "$patch does not apply to $mod@$ver (see $log)"
    (cd "$src" && go mod edit -replace="$mod=$work")
    echo "== $dir builds $mod@$ver patched with $patch" >> "$log"
  done
  prepared_src[$dir]=$src
}

compile() { # output-name package ldflags start: go build in $src, into $bindir only once it succeeded
  local out=$1 pkg=$2 ldflags=$3 start=$4
  if ! (cd "$src" && go build -trimpath -ldflags "$ldflags" -o "$bindir/$out.tmp" "$pkg") >> "$log" 2>&1; then
    echo "build.sh: building $out failed; last lines of $log:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
  mv "$bindir/$out.tmp" "$bindir/$out"
  echo "== built $out in $((SECONDS - start)) s" >> "$log"
}

build() { # module-dir output-name package ldflags
  local dir=$1 out=$2 pkg=$3 ldflags=$4 start=$SECONDS
  echo "== building $out ($pkg)" >> "$log"
  source_dir "$dir"
  compile "$out" "$pkg" "$ldflags" "$start"
}

release_src() { # module version: sets $src to a writable copy of the verified release zip, unpacked under the cache
  local module=$1 version=$2 dir
  dir=$(go mod download -json "$module@$version" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])') \
    || fail "go mod download $module@$version failed"
  src="$bindir/src/${module##*/}@$version"
  if [ ! -f "$src/.unpacked" ]; then
    rm -rf "$src"
    mkdir -p "$(dirname "$src")"
    cp -r "$dir" "$src"
    chmod -R u+w "$src"
    touch "$src/.unpacked"
  fi
}

build_release() { # module version output-name package [ldflags]
  local module=$1 version=$2 out=$3 pkg=$4 ldflags=${5:--s -w} start=$SECONDS
  echo "== building $out ($module@$version $pkg, as the main module)" >> "$log"
  release_src "$module" "$version"
  compile "$out" "$pkg" "$ldflags" "$start"
}

if [ "$mode" = test ]; then
  for dir in etcd kube kwok; do
    compgen -G "$here/$dir/*_test.go" > /dev/null || continue
    source_dir "$dir"
    (cd "$src" && go test -trimpath -count=1 ./...) || fail "Go tests of $dir failed"
  done
  exit 0
fi

build etcd etcd . "-s -w"
build kube kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$kube_ldflags"
build kube kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$kube_ldflags"
build kube kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler "$kube_ldflags"
build kube kubectl k8s.io/kubernetes/cmd/kubectl "$kube_ldflags"
build kwok kwok sigs.k8s.io/kwok/cmd/kwok "$kwok_ldflags"
build_release github.com/openkruise/kruise "$KRUISE_VERSION" kruise-manager .
# The node agent, as upstream's Dockerfile builds it (CGO_ENABLED=0 go build ./cmd/daemon/main.go, kruise@v1.8.0 Dockerfile).
build_release github.com/openkruise/kruise "$KRUISE_VERSION" kruise-daemon ./cmd/daemon
for cmd in koord-manager koord-scheduler koord-descheduler; do
  build_release github.com/koordinator-sh/koordinator "$KOORDINATOR_VERSION" "$cmd" "./cmd/$cmd"
done
# koordlet needs cgo: pkg/koordlet/util/perf_group is cgo-only (`#cgo LDFLAGS: -lpfm`, perf_group_linux.go), built by
# upstream against libpfm 4.13.0 (koordinator@v1.6.0 docker/koordlet.dockerfile), which is Debian's libpfm4-dev.
# Linked statically, so the binary runs in the pod's near-empty root; it dials IP addresses only, so glibc's
# warning that getaddrinfo needs the shared libraries at run time does not apply.
CGO_ENABLED=1 build_release github.com/koordinator-sh/koordinator "$KOORDINATOR_VERSION" koordlet ./cmd/koordlet \
  '-s -w -linkmode external -extldflags "-static"'
rm -rf "$bindir/src"/*@*  # the unpacked release trees (hundreds of MB); Go's caches keep what a rebuild needs
printf '{"github.com/openkruise/kruise": "%s", "github.com/koordinator-sh/koordinator": "%s"}\n' \
  "$KRUISE_VERSION" "$KOORDINATOR_VERSION" > "$bindir/versions.json"
touch "$bindir/.complete"
# >>> rie
build_rie
# <<< rie
echo "$bindir"
