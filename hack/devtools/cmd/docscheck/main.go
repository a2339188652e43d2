// Command docscheck fails when a doc (README.md, docs/**/*.md) holds a date or a commit
// hash outside docs/benchmarks.md, or a relative link that leads nowhere
// (hack/devtools/docscheck); `make lint` runs it.
//
//	docscheck [repository root]
package main

import (
	"fmt"
	"os"

	"github.com/valkey-operator/valkey-operator/hack/devtools/docscheck"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	vs, err := docscheck.Check(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "docscheck:", err)
		os.Exit(2)
	}
	for _, v := range vs {
		fmt.Fprintln(os.Stderr, "docscheck:", v)
	}
	if len(vs) > 0 {
		fmt.Fprintln(os.Stderr, "docscheck: a doc says what is true now; past runs go to CHANGELOG.md, measured figures to docs/benchmarks.md")
		os.Exit(1)
	}
	fmt.Println("docscheck: no date, commit hash or broken link in the docs")
}
