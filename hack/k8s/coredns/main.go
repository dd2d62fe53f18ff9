// CoreDNS for the real node's cluster DNS (preflight_dev.testing.realnode), built with only
// the plugins that serves: CoreDNS's documented way of a smaller build is a main package of
// one's own that imports the plugins wanted and sets dnsserver.Directives to their order
// (the full list is core/dnsserver/zdirectives.go, generated from plugin.cfg).
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

// The order plugin.cfg gives these plugins.
var directives = []string{"bind", "ready", "errors", "log", "kubernetes"}

func init() {
	dnsserver.Directives = directives
}

func main() {
	coremain.Run()
}
