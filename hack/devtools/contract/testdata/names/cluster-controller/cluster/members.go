package cluster

import (
	"fmt"

	api "github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// A consumer guessing the names of Secrets other controllers make.
func mounts(cluster string) []string {
	return []string{api.SystemUsersSecretName(cluster), fmt.Sprintf("%s-tls-accepted", cluster)}
}

// Words that only look like the names.
var words = []string{"acl-controller", "the tls-accepted copy", "-system-users-2"}
