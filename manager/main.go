// Command manager runs the operator's controllers in one process: one manager, one
// cache of the objects they watch, one Lease, one metrics endpoint. Each controller is
// the same component its own binary runs (the <controller>/component packages); they
// share the cache and the API client, never state, and still coordinate only through
// the status of the objects. --controllers chooses which of them run; each one's own
// flags take its name as a prefix (--cluster-controller.fast-failover). The chart runs
// it so when controllers.combined is true (docs/scale.md says when to choose which).
//
// With a controller's name as its first argument (manager cluster-controller
// --fast-failover=true), it is that controller alone, as its own binary would run it.
// The chart runs every controller's Deployment so, so that a node running several of
// them holds the pages of one program, not of five.
package main

import (
	acl "github.com/valkey-operator/valkey-operator/acl-controller/component"
	backup "github.com/valkey-operator/valkey-operator/backup-controller/component"
	cluster "github.com/valkey-operator/valkey-operator/cluster-controller/component"
	"github.com/valkey-operator/valkey-operator/internal/operator"
	node "github.com/valkey-operator/valkey-operator/node-controller/component"
	tls "github.com/valkey-operator/valkey-operator/tls-controller/component"
)

func main() {
	operator.MainAll("manager", cluster.New(), node.New(), acl.New(), tls.New(), backup.New())
}
