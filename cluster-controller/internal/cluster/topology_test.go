package cluster

import (
	"testing"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan/plantest"
	"github.com/valkey-operator/valkey-operator/internal/guard"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// scopeFor builds the scope of a pass over vc whose members are fms
// (plantest.ClusterFor).
func scopeFor(t *testing.T, vc *v1alpha1.ValkeyCluster, fms []plantest.FakeMember, extra ...valkey.ClusterNode) *scope {
	t.Helper()
	return &scope{Cluster: *plantest.ClusterFor(t, vc, fms, extra...), guard: guard.Check(vc)}
}
