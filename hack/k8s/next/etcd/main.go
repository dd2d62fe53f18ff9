// Command etcd is the etcd server that the next k8s.io/kubernetes depends on (as
// ../../etcd is for the default control plane).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
