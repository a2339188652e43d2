package acl

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/statemetrics"
)

var descApplied = statemetrics.Desc("acl_revision_applied",
	"1 when the member's server runs the cluster's current aclfile revision (its ACLApplied condition is True), 0 while the revision is not live there yet.",
	statemetrics.MemberLabels...)

// NewCollector returns the acl-controller's metrics, read from the status it wrote.
func NewCollector(r client.Reader) prometheus.Collector {
	return &statemetrics.Collector{Reader: r, Descs: []*prometheus.Desc{descApplied}, Gather: gather}
}

// gather emits the members the acl-controller reported on.
func gather(ctx context.Context, r client.Reader, emit statemetrics.Emit) error {
	return statemetrics.MemberCondition(ctx, r, emit, descApplied, v1alpha1.ConditionACLApplied,
		statemetrics.Reported(v1alpha1.ConditionACLApplied))
}
