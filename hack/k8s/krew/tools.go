//go:build tools

// Package tools pins krew, the kubectl plugin manager, for the install-path e2e
// (tests/e2e/test_install_paths.py installs the release's plugin archive with it). Its own
// module, so krew's client-go never moves a Kubernetes pin of ../go.mod.
package tools

import (
	_ "sigs.k8s.io/krew/cmd/krew"
)
