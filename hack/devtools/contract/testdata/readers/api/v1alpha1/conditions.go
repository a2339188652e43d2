package v1alpha1

const (
	// ConditionACLReady (ValkeyCluster, acl-controller).
	ConditionACLReady = "ACLReady"
	// ConditionPodReady (ValkeyNode, node-controller).
	ConditionPodReady = "PodReady"
)
