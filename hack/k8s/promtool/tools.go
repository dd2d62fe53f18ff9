//go:build tools

// Package tools pins promtool (the Prometheus rule checker), so `go mod tidy` keeps its
// dependencies in go.sum. Its own module, so Prometheus' client-go never moves a
// Kubernetes pin of ../go.mod.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
