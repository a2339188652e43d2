package cluster

import (
	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

// holdForRestore keeps a cluster with a data source from being reported Ready before
// the backup-controller reports Restored=True: until then the cluster holds only part
// of its data (and the acl-controller has not loaded spec.users). Ready turns False
// with WaitingForRestore, Progressing True, and the state stays Creating.
func holdForRestore(vc *v1alpha1.ValkeyCluster, st *clusterStatus) {
	if !v1alpha1.RestorePending(vc) {
		return
	}
	msg := "waiting for the data source to be restored (see the Restored condition)"
	if c := conditions.Get(vc.Status.Conditions, v1alpha1.ConditionRestored); c != nil && c.Message != "" {
		msg += ": " + c.Message
	}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		switch {
		case c.Type == v1alpha1.ConditionReady && c.Status == "True":
			*c = conditions.New(v1alpha1.ConditionReady, false, v1alpha1.ReasonWaitingForRestore, msg, vc.Generation)
			if st.State == v1alpha1.StateReady {
				st.State = v1alpha1.StateCreating
			}
		case c.Type == v1alpha1.ConditionProgressing && c.Status != "True":
			*c = conditions.New(v1alpha1.ConditionProgressing, true, v1alpha1.ReasonWaitingForRestore, msg, vc.Generation)
		}
	}
}
