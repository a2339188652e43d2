package cluster

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

func TestHoldForRestore(t *testing.T) {
	ready := func() clusterStatus {
		return clusterStatus{State: v1alpha1.StateReady, Conditions: []metav1.Condition{
			conditions.New(v1alpha1.ConditionReady, true, v1alpha1.ReasonClusterReady, "ok", 1),
			conditions.New(v1alpha1.ConditionProgressing, false, v1alpha1.ReasonReconciled, "ok", 1),
		}}
	}
	cases := []struct {
		name      string
		source    bool
		restored  metav1.ConditionStatus
		wantReady metav1.ConditionStatus
		wantState v1alpha1.ClusterState
	}{
		{name: "no data source", wantReady: metav1.ConditionTrue, wantState: v1alpha1.StateReady},
		{name: "data source not restored yet", source: true, wantReady: metav1.ConditionFalse, wantState: v1alpha1.StateCreating},
		{name: "restore failed", source: true, restored: metav1.ConditionFalse, wantReady: metav1.ConditionFalse, wantState: v1alpha1.StateCreating},
		{name: "restored", source: true, restored: metav1.ConditionTrue, wantReady: metav1.ConditionTrue, wantState: v1alpha1.StateReady},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vc := &v1alpha1.ValkeyCluster{}
			if c.source {
				vc.Spec.DataSource = &v1alpha1.DataSource{BackupName: "b"}
			}
			if c.restored != "" {
				vc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionRestored, Status: c.restored, Reason: "x", Message: "m"}}
			}
			st := ready()
			holdForRestore(vc, &st)
			got := conditions.Get(st.Conditions, v1alpha1.ConditionReady)
			if got.Status != c.wantReady || st.State != c.wantState {
				t.Errorf("Ready %s (%s), state %s; want %s, %s", got.Status, got.Reason, st.State, c.wantReady, c.wantState)
			}
			if c.wantReady == metav1.ConditionFalse && !conditions.IsTrue(st.Conditions, v1alpha1.ConditionProgressing) {
				t.Error("Progressing is not True while the restore is pending")
			}
		})
	}
}
