package v1alpha1

type ValkeyCluster struct{ Status ValkeyClusterStatus }

type ValkeyClusterStatus struct {
	ACL *ACLStatus `json:"acl,omitempty"`
}

type ACLStatus struct {
	SystemUsersSecretName string `json:"systemUsersSecretName"`
}

type ValkeyNodeStatus struct {
	PodIP string `json:"podIP,omitempty"`
}

type ValkeyBackupStatus struct{}

type ValkeyBackupScheduleStatus struct{}

// SystemUsersSecretOf reads status.acl.
func SystemUsersSecretOf(vc *ValkeyCluster) string {
	if vc.Status.ACL == nil {
		return ""
	}
	return vc.Status.ACL.SystemUsersSecretName
}
