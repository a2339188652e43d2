package memberpod

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// RunAsID is the user and group the Valkey images run as; every container of a member's
// pod runs as it, and the pod's volumes are group-owned by it.
const RunAsID int64 = 999

// PodSecurityContext runs every container as RunAsID, with the runtime's default
// seccomp profile; volumes are group-owned by that user.
func PodSecurityContext() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:        ptr.To(true),
		RunAsUser:           ptr.To(RunAsID),
		RunAsGroup:          ptr.To(RunAsID),
		FSGroup:             ptr.To(RunAsID),
		FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
		SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// ContainerSecurityContext is the restricted profile of every container the operator
// builds (the server and the exporter).
func ContainerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To(RunAsID),
		RunAsGroup:               ptr.To(RunAsID),
		ReadOnlyRootFilesystem:   ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// RestrictSidecar fills in the container-level settings of the restricted Pod Security
// Standard that a sidecar leaves unset (no privilege escalation, every capability
// dropped); the pod's security context gives the rest (non-root, RuntimeDefault
// seccomp). What a sidecar sets itself is kept, and Check judges it.
func RestrictSidecar(c *corev1.Container) {
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	sc := c.SecurityContext
	if sc.AllowPrivilegeEscalation == nil {
		sc.AllowPrivilegeEscalation = ptr.To(false)
	}
	if sc.Capabilities == nil {
		sc.Capabilities = &corev1.Capabilities{}
	}
	if !slices.Contains(sc.Capabilities.Drop, "ALL") {
		sc.Capabilities.Drop = append(sc.Capabilities.Drop, "ALL")
	}
}
