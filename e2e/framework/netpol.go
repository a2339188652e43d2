package framework

import (
	"context"
	"fmt"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NetworkPolicyEnforced says whether the Kubernetes under test enforces NetworkPolicy,
// and if not why: the local Kubernetes does when its engine (kube-network-policies, a
// DaemonSet in kube-system) runs on every node; kind's clusters run none.
// E2E_NETWORK_POLICY_ENFORCED=1 says another cluster's engine does. An engine that is
// there but not ready on every node is an error, not a reason to skip.
func (k *Cluster) NetworkPolicyEnforced(ctx context.Context) (bool, string, error) {
	if os.Getenv("E2E_NETWORK_POLICY_ENFORCED") == "1" {
		return true, "", nil
	}
	var ds appsv1.DaemonSet
	err := k.Client.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "kube-network-policies"}, &ds)
	if apierrors.IsNotFound(err) {
		return false, "no kube-network-policies DaemonSet (LOCALKUBE_NETWORK_POLICY=off, or not the local Kubernetes; E2E_NETWORK_POLICY_ENFORCED=1 says another engine runs)", nil
	}
	if err != nil {
		return false, "", err
	}
	if ds.Status.DesiredNumberScheduled == 0 || ds.Status.NumberReady != ds.Status.DesiredNumberScheduled {
		return false, "", fmt.Errorf("kube-network-policies: %d of %d agents ready", ds.Status.NumberReady, ds.Status.DesiredNumberScheduled)
	}
	return true, "", nil
}
