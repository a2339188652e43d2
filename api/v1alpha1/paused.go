package v1alpha1

import "k8s.io/apimachinery/pkg/api/meta"

// Paused reports whether the cluster-controller reports the cluster paused (its Paused
// condition is True). The acl-, tls- and backup-controllers hold their planned
// rollouts on it; they read the condition, never the annotation, so every controller
// holds and resumes on the word of the one that owns the pause.
func Paused(vc *ValkeyCluster) bool {
	return vc != nil && meta.IsStatusConditionTrue(vc.Status.Conditions, ConditionPaused)
}
