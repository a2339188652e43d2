package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
)

// The Secrets a controller makes for the others are found through the status of the
// controller that makes them, never by the convention of their names: the acl-controller
// names its Secrets in status.acl, the tls-controller its copy of the certificate in
// status.tls.acceptedSecretName. A reader whose field is empty waits on the producer's
// condition. The name builders (ACLSecretName, SystemUsersSecretName, TLSSecretName) are
// for the producers alone: `make lint` (hack/devtools/contract) refuses them, and their
// suffixes in string literals, anywhere else in the operator.

// NotPublishedError says a cluster's status does not name a Secret yet: the controller
// that makes it has not published it. Its message names that controller's condition as
// it stands, so the reader's own condition can say what it waits for.
// +kubebuilder:object:generate=false
type NotPublishedError struct {
	// Field is the empty status field.
	Field string
	// Producer is the controller that writes it.
	Producer string
	// Reason is the reason a reader reports while it waits (WaitingForACL, WaitingForTLS).
	Reason string
	// Condition is the producer's condition as it stands ("ACLReady=False
	// PasswordMissing: ..."), or says that it was never reported.
	Condition string
}

func (e *NotPublishedError) Error() string {
	return fmt.Sprintf("%s is not set: waiting for the %s (%s)", e.Field, e.Producer, e.Condition)
}

// notPublished builds the error of an empty field from the producer's condition.
func notPublished(vc *ValkeyCluster, field, producer, reason, condType string) *NotPublishedError {
	e := &NotPublishedError{Field: field, Producer: producer, Reason: reason}
	c := meta.FindStatusCondition(vc.Status.Conditions, condType)
	if c == nil {
		e.Condition = fmt.Sprintf("%s is not reported yet: is the %s running?", condType, producer)
		return e
	}
	e.Condition = fmt.Sprintf("%s=%s %s", condType, c.Status, c.Reason)
	if c.Message != "" {
		e.Condition += ": " + c.Message
	}
	return e
}

// ACLSecretOf is the Secret of the cluster's aclfile, as status.acl.secretName names it.
func ACLSecretOf(vc *ValkeyCluster) (string, error) {
	if vc.Status.ACL == nil || vc.Status.ACL.SecretName == "" {
		return "", notPublished(vc, "status.acl.secretName", "acl-controller", ReasonWaitingForACL, ConditionACLReady)
	}
	return vc.Status.ACL.SecretName, nil
}

// SystemUsersSecretOf is the Secret of the operator's users' passwords, as
// status.acl.systemUsersSecretName names it.
func SystemUsersSecretOf(vc *ValkeyCluster) (string, error) {
	if vc.Status.ACL == nil || vc.Status.ACL.SystemUsersSecretName == "" {
		return "", notPublished(vc, "status.acl.systemUsersSecretName", "acl-controller", ReasonWaitingForACL, ConditionACLReady)
	}
	return vc.Status.ACL.SystemUsersSecretName, nil
}

// AcceptedTLSSecretOf is the operator's copy of the cluster's certificate, as
// status.tls.acceptedSecretName names it; "" for a cluster without spec.tls.
func AcceptedTLSSecretOf(vc *ValkeyCluster) (string, error) {
	if vc.Spec.TLS == nil {
		return "", nil
	}
	if vc.Status.TLS == nil || vc.Status.TLS.AcceptedSecretName == "" {
		return "", notPublished(vc, "status.tls.acceptedSecretName", "tls-controller", ReasonWaitingForTLS, ConditionTLSReady)
	}
	return vc.Status.TLS.AcceptedSecretName, nil
}
