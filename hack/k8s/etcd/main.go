// Command etcd is the etcd server that k8s.io/kubernetes already depends on, so the
// local control plane's store is real etcd at the version Kubernetes was tested with.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
