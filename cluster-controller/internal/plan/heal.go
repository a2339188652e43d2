package plan

import (
	"time"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkeyconf"
)

const (
	// TakeoverMargin is added to twice the node timeout before the operator concludes that
	// Valkey's own failover will not happen (quorum lost) and forces one.
	TakeoverMargin = 2 * time.Second
)

// NodeTimeout is the cluster's cluster-node-timeout.
func NodeTimeout(vc *v1alpha1.ValkeyCluster) time.Duration {
	return valkeyconf.NodeTimeout(vc.Spec.Config)
}
