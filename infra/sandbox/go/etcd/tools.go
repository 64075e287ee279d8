//go:build tools

// Package tools pins the etcd server the sandbox builds (the version Kubernetes pins).
package tools

import (
	_ "go.etcd.io/etcd/server/v3/etcdmain"
)
