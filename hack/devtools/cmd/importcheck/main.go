// Command importcheck checks the workspace against the project's import rules
// (hack/devtools/importrules) and prints every violation; `make lint` runs it.
//
//	importcheck [repository root]
//	importcheck -doc FILE   (write the rules table into FILE, between its markers)
package main

import (
	"fmt"
	"os"

	"github.com/valkey-operator/valkey-operator/hack/devtools/importrules"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-doc" {
		if err := writeDoc(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "importcheck:", err)
			os.Exit(2)
		}
		return
	}
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

// writeDoc puts the rules table between the "import-rules" markers of a document.
func writeDoc(path string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := importrules.Splice(string(doc), "import-rules", importrules.Markdown())
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(out), 0o644)
}
