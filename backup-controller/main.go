// Command backup-controller runs the backups, backup schedules and restores of
// ValkeyClusters. The same binary, from the operator image, is the program of the Jobs
// it creates (its backup, restore-fetch, restore-load, store-probe, manifest-write,
// manifest-read and store-delete subcommands): all the object-store traffic runs there,
// in the clusters' namespaces, never in the controller's own process.
package main

import (
	"os"

	"github.com/valkey-operator/valkey-operator/backup-controller/component"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/job"
	"github.com/valkey-operator/valkey-operator/internal/operator"
)

func main() {
	if job.IsJob(os.Args[1:]) {
		job.Main(os.Args[1:])
		return
	}
	operator.Main(component.New())
}
