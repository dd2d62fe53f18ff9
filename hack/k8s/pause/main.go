// Command pause is the sandbox process of the real node's pods: the process that holds a
// pod's namespaces while its containers come and go. containerd runs one per pod from the
// image named by its sandbox_image setting; no registry is reachable, so the node's
// sandbox image is built locally from this binary alone (preflight_dev.testing.images).
//
// It does what a pod sandbox process must: wait forever, exit 0 on SIGINT or SIGTERM (the
// runtime stopping the pod), and, as PID 1 of the pod's PID namespace when the namespace is
// shared, reap the zombies that are re-parented to it.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("pause (vllm-preflight)")
		return
	}
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig == syscall.SIGCHLD {
			for {
				var status syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		os.Exit(0)
	}
}
