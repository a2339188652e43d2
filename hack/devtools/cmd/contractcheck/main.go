// Command contractcheck checks the status contract against the code
// (hack/devtools/contract): no component outside a Secret's producer builds its name by
// convention, and the "read by" column of docs/status-contract.md names the components
// whose code reads each row; `make lint` runs it.
//
//	contractcheck [repository root]
package main

import (
	"fmt"
	"os"

	"github.com/valkey-operator/valkey-operator/hack/devtools/contract"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	names, err := contract.Names(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "contractcheck:", err)
		os.Exit(2)
	}
	readers, err := contract.Readers(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "contractcheck:", err)
		os.Exit(2)
	}
	for _, v := range append(names, readers...) {
		fmt.Fprintln(os.Stderr, "contractcheck:", v)
	}
	if len(names)+len(readers) > 0 {
		os.Exit(1)
	}
	fmt.Println("contractcheck: published Secrets are read through status; the contract's readers are the code's")
}
