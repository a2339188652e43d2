// Command kubectl-valkey is the kubectl plugin of the Valkey operator: `kubectl valkey
// status|failover|restart|pause|resume|cli`. It reads the API and asks for actions
// through it (annotations the cluster-controller acts on); it never talks to Valkey
// itself, except `cli`, which runs valkey-cli in a temporary pod.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/valkey-operator/valkey-operator/kubectl-valkey/internal/plugin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := plugin.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
