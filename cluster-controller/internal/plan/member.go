package plan

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkeyconf"
	"github.com/valkey-operator/valkey-operator/valkeyconf/redact"
)

// SlotCount is the number of hash slots of a Valkey cluster.
const SlotCount = valkey.SlotCount

// Gone reports whether a member's pod is dead for good: with workloadType Pod nothing
// restarts it, so the member is replaced. Other workloads bring their pod back.
func Gone(m *Member) bool {
	c := conditions.Get(m.Node.Status.Conditions, v1alpha1.ConditionPodReady)
	return m.Node.Spec.WorkloadType == v1alpha1.WorkloadPod && c != nil && c.Status == "False" &&
		(c.Reason == v1alpha1.ReasonPodTerminated || c.Reason == v1alpha1.ReasonPodMissing)
}

// BlockingReasons are the PodReady and StorageReady reasons of a member that cannot run
// until someone fixes something: waiting more changes nothing.
var BlockingReasons = map[string]bool{
	v1alpha1.ReasonPodUnschedulable: true, v1alpha1.ReasonImagePullBackOff: true, v1alpha1.ReasonCrashLoop: true,
	v1alpha1.ReasonPodTerminated: true, v1alpha1.ReasonPriorityClassNotFound: true, v1alpha1.ReasonFailedCreate: true,
	v1alpha1.ReasonStorageClassNotFound: true, v1alpha1.ReasonNameConflict: true, v1alpha1.ReasonUnsupportedServer: true,
}

// CannotRun returns the condition saying why a member's server cannot run, or nil.
func (m *Member) CannotRun() *metav1.Condition {
	for _, typ := range []string{v1alpha1.ConditionStorageReady, v1alpha1.ConditionPodReady} {
		if c := conditions.Get(m.Node.Status.Conditions, typ); c != nil && c.Status != metav1.ConditionTrue && BlockingReasons[c.Reason] {
			return c
		}
	}
	return nil
}

// Empty reports whether no slot is served by anyone: a cluster being formed.
func Empty(t *Topology) bool { return t.CoveredSlots() == 0 }

// PodCurrent reports whether the member's pod was built for the revision its spec holds
// (the node-controller reports the revision of the running pod).
func (m *Member) PodCurrent() bool {
	return m.Node.Status.Revision == m.Node.Spec.Revision
}

// Restarting reports whether a member was authorised a new revision its running pod was
// not built for yet. A member that never ran a pod (revision 0 in status) is starting,
// not restarting.
func (m *Member) Restarting() bool {
	return m.Node.Status.Revision != 0 && !m.PodCurrent()
}

// LiveVersion is the server version that decides which keys are live for a member
// (valkeyconf.MemberVersion, as in the node-controller).
func (m *Member) LiveVersion() valkey.Version {
	var observed valkey.Version
	if m.Reachable {
		observed = m.Version
	}
	return valkeyconf.MemberVersion(observed, m.Node.Status.Version)
}

// MemberMessage is a member's condition message as this controller repeats it, in the
// cluster's conditions and events: with the secrets a server may have quoted removed.
// The node-controller removes them from what it copies from a pod; this removes them
// again, for a member status written by an older node-controller.
func MemberMessage(c *metav1.Condition) string { return redact.Text(c.Message) }
