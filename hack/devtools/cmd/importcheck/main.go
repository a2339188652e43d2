// Command importcheck checks the workspace against the project's import rules
// (hack/devtools/importrules) and prints every violation; `make lint` runs it.
//
//	importcheck [repository root]
package main

import (
	"fmt"
	"os"

	"github.com/valkey-operator/valkey-operator/hack/devtools/importrules"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	vs, err := importrules.CheckRepo(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "importcheck:", err)
		os.Exit(2)
	}
	for _, v := range vs {
		fmt.Fprintln(os.Stderr, "importcheck:", v)
	}
	if len(vs) > 0 {
		os.Exit(1)
	}
	fmt.Println("importcheck: every module keeps its import rules")
}
