package certs

import "github.com/valkey-operator/valkey-operator/api/v1alpha1"

// A test of the tls-controller reads PodReady: tests are not the component.
var pod = v1alpha1.ConditionPodReady
