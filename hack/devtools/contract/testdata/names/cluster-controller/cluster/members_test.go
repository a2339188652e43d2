package cluster

import "github.com/valkey-operator/valkey-operator/api/v1alpha1"

// Tests make the producers' Secrets themselves.
var fixture = v1alpha1.SystemUsersSecretName("vk")
