//go:build tools

// Package tools pins the KWOK commands the sandbox builds.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
	_ "sigs.k8s.io/kwok/cmd/kwokctl"
)
