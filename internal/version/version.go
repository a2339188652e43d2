// Package version is the release of the operator's binaries, set when they are built:
//
//	go build -ldflags "-X github.com/valkey-operator/valkey-operator/internal/version.Version=0.2.0 \
//	  -X github.com/valkey-operator/valkey-operator/internal/version.Revision=<commit>"
//
// The Makefile sets both from the VERSION file and git; a plain go build reports "dev".
package version

import (
	"fmt"
	"runtime"
)

var (
	// Version is the release (the VERSION file), "dev" when not set at build time.
	Version = "dev"
	// Revision is the commit the binary was built from.
	Revision = "unknown"
)

// String is what `<component> --version` prints.
func String(component string) string {
	return fmt.Sprintf("%s %s (revision %s, %s, %s/%s)", component, Version, Revision, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
