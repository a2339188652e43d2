package v1alpha1

// SystemUsersSecretName is the name of the Secret with the operator's users' passwords.
func SystemUsersSecretName(cluster string) string { return cluster + "-system-users" }

// TLSSecretName is the name of the operator's copy of a cluster's certificate.
func TLSSecretName(cluster string) string { return cluster + "-tls-accepted" }
