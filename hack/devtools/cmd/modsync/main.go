// Command modsync writes, in every go.mod of the workspace, the require and replace lines
// of the sibling modules its code imports (hack/devtools/modsync); `make tidy` runs it
// before go mod tidy, and `make lint` runs it with -check.
//
//	modsync [-check] [repository root]
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/valkey-operator/valkey-operator/hack/devtools/modsync"
)

func main() {
	check := flag.Bool("check", false, "change nothing; fail when a go.mod is out of date")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	stale, err := modsync.Sync(root, *check)
	if err != nil {
		fmt.Fprintln(os.Stderr, "modsync:", err)
		os.Exit(2)
	}
	switch {
	case *check && len(stale) > 0:
		fmt.Fprintf(os.Stderr, "modsync: the sibling modules of %s are out of date: run make tidy\n", strings.Join(stale, ", "))
		os.Exit(1)
	case len(stale) > 0:
		fmt.Printf("modsync: updated %s\n", strings.Join(stale, ", "))
	}
}
