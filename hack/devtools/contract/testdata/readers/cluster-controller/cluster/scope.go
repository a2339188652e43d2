package cluster

import (
	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
)

// The cluster-controller reads status.acl through two shared functions, and PodReady.
func credentials(vc *v1alpha1.ValkeyCluster) string { return valkeyconn.ForCluster(vc) }

var ready = v1alpha1.ConditionPodReady
