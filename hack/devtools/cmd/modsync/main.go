// Command modsync writes, in every go.mod of the workspace, the require and replace lines
// of the sibling modules its code imports, the siblings at the version of VERSION, and
// every third-party module at the one version the workspace uses, the newest any go.mod
// requires (hack/devtools/modsync); `make tidy` runs it around go mod tidy, and
// `make lint` runs it with -check, which names each module required at several versions.
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
	report, err := modsync.Sync(root, *check)
	if err != nil {
		fmt.Fprintln(os.Stderr, "modsync:", err)
		os.Exit(2)
	}
	if !*check {
		if len(report.Stale) > 0 {
			fmt.Printf("modsync: updated %s\n", strings.Join(report.Stale, ", "))
		}
		return
	}
	for _, s := range report.Skews {
		fmt.Fprintf(os.Stderr, "modsync: %s; make tidy aligns them on %s\n", s, s.Newest())
	}
	if len(report.Stale) > 0 {
		fmt.Fprintf(os.Stderr, "modsync: the go.mod of %s is out of date: run make tidy\n", strings.Join(report.Stale, ", "))
	}
	if len(report.Stale) > 0 || len(report.Skews) > 0 {
		os.Exit(1)
	}
}
