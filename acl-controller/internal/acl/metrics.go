package acl

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/statemetrics"
)

var descApplied = statemetrics.Desc("acl_revision_applied",
	"1 when the member's server runs the cluster's current aclfile revision (its ACLApplied condition is True), 0 while the revision is not live there yet.",
	"namespace", "cluster", "shard", "member")

// NewCollector returns the acl-controller's metrics, read from the status it wrote.
func NewCollector(r client.Reader) prometheus.Collector {
	return &statemetrics.Collector{Reader: r, Descs: []*prometheus.Desc{descApplied}, Gather: gather}
}

func gather(ctx context.Context, r client.Reader, emit statemetrics.Emit) error {
	var vns v1alpha1.ValkeyNodeList
	if err := r.List(ctx, &vns); err != nil {
		return err
	}
	for _, vn := range vns.Items {
		if conditions.Get(vn.Status.Conditions, v1alpha1.ConditionACLApplied) == nil {
			continue // not seen by the acl-controller yet
		}
		emit(descApplied, statemetrics.Bool(conditions.IsTrue(vn.Status.Conditions, v1alpha1.ConditionACLApplied)),
			vn.Namespace, vn.Spec.ClusterName, statemetrics.Shard(vn.Spec.ShardIndex), vn.Name)
	}
	return nil
}
