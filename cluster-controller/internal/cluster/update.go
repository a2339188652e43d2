package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
)

// reconcileLiveConfig hands live changes to the members without a roll: config keys the
// server takes with CONFIG SET (the node-controller applies them and reports
// ConfigApplied) and a volume size that grows.
func (r *Reconciler) reconcileLiveConfig(ctx context.Context, s *scope) (time.Duration, error) {
	var updated []string
	for _, m := range s.Topo.Members {
		if m.Leaving() {
			continue
		}
		want := plan.DesiredSpec(s.VC, m.Shard())
		d := plan.DiffSpec(m.Node.Spec, want, m.LiveVersion())
		if !d.Live || d.Roll {
			continue
		}
		patch := client.MergeFrom(m.Node.DeepCopy())
		m.Node.Spec.Config = want.Config
		m.Node.Spec.Persistence = want.Persistence
		if err := r.Patch(ctx, m.Node, patch); err != nil {
			return 0, fmt.Errorf("update live settings of %s: %w", m.Name(), err)
		}
		updated = append(updated, m.Name())
	}
	if len(updated) > 0 {
		r.event(s.VC, nil, eventNormal, "LiveConfigUpdated", "Configure", "live settings handed to %s", strings.Join(updated, ", "))
		s.progress(v1alpha1.ReasonReconciled, "applying live settings on %d members", len(updated))
	}
	return 0, nil
}
