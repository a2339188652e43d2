package framework

import "github.com/valkey-operator/valkey-operator/api/v1alpha1"

// The suites check what the operator made, by name.
var users = v1alpha1.SystemUsersSecretName("vk")
