// Command registry is the CNCF distribution registry (github.com/distribution/distribution/v3)
// with the storage drivers a local test registry uses -- the filesystem and in-memory ones
// -- and htpasswd auth. Upstream's cmd/registry also links the Azure, GCS and S3 drivers and
// their cloud SDKs, which a registry on 127.0.0.1 never uses and which would multiply the
// cold build time (docs/CONTROL_PLANE.md, "The OCI registry"). The command line, the
// configuration file and the HTTP API are upstream's: registry.RootCmd is its root command.
package main

import (
	"os"

	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
)

func main() {
	if err := registry.RootCmd.Execute(); err != nil {
		os.Exit(1)
	}
}
