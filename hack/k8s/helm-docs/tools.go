//go:build tools

// Package tools pins helm-docs (the chart README generator), so `go mod tidy` keeps its
// dependencies in go.sum. Its own module, so its older helm never moves ../helm's pin.
package tools

import (
	_ "github.com/norwoodj/helm-docs/cmd/helm-docs"
)
