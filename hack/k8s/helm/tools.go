//go:build tools

// Package tools pins helm's command. Helm lives in its own module so that its
// dependencies never move the Kubernetes pins of ../go.mod.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
