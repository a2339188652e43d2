package certs

import "github.com/valkey-operator/valkey-operator/api/v1alpha1"

// The tls-controller reads ACLReady, which the table does not say.
var acl = v1alpha1.ConditionACLReady
