#!/usr/bin/env bash
# Regenerates the Go wrapper modules from the pins in versions.env.
#
# kube/: requires k8s.io/kubernetes and replaces every staging module k8s.io/* with the
#        published v0.Y.Z, read from upstream's own go.mod (never hand-listed), so a
#        version bump cannot miss a newly added staging module.
# etcd/: requires go.etcd.io/etcd/server/v3 at the version k8s.io/kubernetes pins.
# kwok/: requires sigs.k8s.io/kwok.
# The results (go.mod, go.sum) are committed; build.sh only builds. After a bump, build.sh refuses a
# patch in patches/ whose module version the new build no longer uses: re-check it, then rename or drop it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC1091
source "$here/versions.env"
export GOFLAGS=-mod=mod

kube_mod=$(go mod download -json "k8s.io/kubernetes@${KUBERNETES_VERSION}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
staging_version="v0.${KUBERNETES_VERSION#v1.}"
etcd_version=$(awk '$1=="go.etcd.io/etcd/server/v3"{print $2}' "$kube_mod")
go_directive=$(awk '$1=="go"{print $2; exit}' "$kube_mod")
[ -n "$etcd_version" ] || { echo "generate.sh: no go.etcd.io/etcd/server/v3 in k8s.io/kubernetes@${KUBERNETES_VERSION} go.mod" >&2; exit 1; }

write_module() { # dir module-path go-directive requirement... ; then tools.go imports from stdin
  local dir=$1 path=$2 godir=$3; shift 3
  mkdir -p "$here/$dir"
  rm -f "$here/$dir/go.mod" "$here/$dir/go.sum"
  { echo "module $path"; echo; echo "go $godir"; } > "$here/$dir/go.mod"
  cat > "$here/$dir/tools.go"
}

write_module kube outpost.local/sandbox/kube "$go_directive" <<'GO'
//go:build tools

// Package tools pins the Kubernetes control-plane commands the sandbox builds.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
(
  cd "$here/kube"
  go mod edit -require="k8s.io/kubernetes@${KUBERNETES_VERSION}"
  # Every "k8s.io/X => ./staging/src/k8s.io/X" of upstream becomes "k8s.io/X => k8s.io/X v0.Y.Z".
  awk '$2=="=>" && $3 ~ /^\.\/staging\/src\// {print $1}' "$kube_mod" | while read -r m; do
    go mod edit -replace="${m}=${m}@${staging_version}"
  done
  go mod tidy
)

write_module etcd outpost.local/sandbox/etcd "$go_directive" <<'GO'
//go:build tools

// Package tools pins the etcd server the sandbox builds (the version Kubernetes pins).
package tools

import (
	_ "go.etcd.io/etcd/server/v3/etcdmain"
)
GO
cat > "$here/etcd/main.go" <<'GO'
// Command etcd is upstream's etcd server (etcdmain), built at the version k8s.io/kubernetes pins.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
( cd "$here/etcd" && go mod edit -require="go.etcd.io/etcd/server/v3@${etcd_version}" && go mod tidy )

write_module kwok outpost.local/sandbox/kwok "$go_directive" <<'GO'
//go:build tools

// Package tools pins the KWOK commands the sandbox builds.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
	_ "sigs.k8s.io/kwok/cmd/kwokctl"
)
GO
( cd "$here/kwok" && go mod edit -require="sigs.k8s.io/kwok@${KWOK_VERSION}" && go mod tidy )
echo "generated: kubernetes ${KUBERNETES_VERSION} (staging ${staging_version}), etcd ${etcd_version}, kwok ${KWOK_VERSION}"
