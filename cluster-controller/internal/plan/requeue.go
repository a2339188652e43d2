package plan

import "time"

// Requeue intervals: how soon a plan asks for the next pass once its step is taken.
// Progress on the Kubernetes side comes from watches; these cover what only Valkey can
// tell (gossip converging, a replica catching up, a failover), which has no event to
// watch.
const (
	RequeueFast = 250 * time.Millisecond
	RequeueWait = time.Second
	RequeueSync = 300 * time.Millisecond
	// RequeueSteady is the default RestPeriod of the reconciler.
	RequeueSteady = 30 * time.Second
)
