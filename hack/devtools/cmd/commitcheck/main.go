// Command commitcheck fails when a commit of HEAD committed after the check came in has a
// subject longer than 72 characters (hack/devtools/commitcheck); `make lint` runs it.
//
//	commitcheck [repository root]
package main

import (
	"fmt"
	"os"

	"github.com/valkey-operator/valkey-operator/hack/devtools/commitcheck"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	vs, err := commitcheck.Check(root, "HEAD", commitcheck.Cutoff)
	if err != nil {
		fmt.Fprintln(os.Stderr, "commitcheck:", err)
		os.Exit(2)
	}
	for _, v := range vs {
		fmt.Fprintln(os.Stderr, "commitcheck:", v)
	}
	if len(vs) > 0 {
		fmt.Fprintln(os.Stderr, "commitcheck: reword them (git rebase -i) before they reach main")
		os.Exit(1)
	}
	fmt.Printf("commitcheck: every subject since %s has at most %d characters\n",
		commitcheck.Cutoff.Format("2006-01-02 15:04 MST"), commitcheck.MaxSubject)
}
