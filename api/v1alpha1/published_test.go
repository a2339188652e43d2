package v1alpha1

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPublishedSecrets reads the Secrets the acl- and tls-controllers name in status, and
// says what a reader waits on while one is not named.
func TestPublishedSecrets(t *testing.T) {
	withTLS := func(vc *ValkeyCluster) {
		vc.Spec.TLS = &TLSSpec{Certificate: &CertificateSpec{SecretName: "user-cert"}}
	}
	published := func(vc *ValkeyCluster) {
		vc.Status.ACL = &ACLStatus{SecretName: "a", SystemUsersSecretName: "u", Revision: "r"}
		vc.Status.TLS = &TLSStatus{SecretName: "user-cert", AcceptedSecretName: "t"}
	}
	aclRefused := func(vc *ValkeyCluster) {
		vc.Status.Conditions = []metav1.Condition{{Type: ConditionACLReady, Status: metav1.ConditionFalse,
			Reason: "PasswordMissing", Message: "user app: Secret pw not found"}}
	}
	for _, tc := range []struct {
		name            string
		mutate          []func(*ValkeyCluster)
		acl, users, tls string
		// wait is the message of the error of each empty field, "" when it is named.
		aclWait, usersWait, tlsWait string
	}{
		{name: "published without TLS", mutate: []func(*ValkeyCluster){published}, acl: "a", users: "u"},
		{name: "published with TLS", mutate: []func(*ValkeyCluster){withTLS, published}, acl: "a", users: "u", tls: "t"},
		{name: "nothing reported", mutate: []func(*ValkeyCluster){withTLS},
			aclWait:   "status.acl.secretName is not set: waiting for the acl-controller (ACLReady is not reported yet: is the acl-controller running?)",
			usersWait: "status.acl.systemUsersSecretName is not set: waiting for the acl-controller (ACLReady is not reported yet: is the acl-controller running?)",
			tlsWait:   "status.tls.acceptedSecretName is not set: waiting for the tls-controller (TLSReady is not reported yet: is the tls-controller running?)"},
		{name: "the acl-controller refuses", mutate: []func(*ValkeyCluster){aclRefused},
			aclWait:   "status.acl.secretName is not set: waiting for the acl-controller (ACLReady=False PasswordMissing: user app: Secret pw not found)",
			usersWait: "status.acl.systemUsersSecretName is not set: waiting for the acl-controller (ACLReady=False PasswordMissing: user app: Secret pw not found)"},
		{name: "status.tls of an older tls-controller", mutate: []func(*ValkeyCluster){withTLS, published,
			func(vc *ValkeyCluster) { vc.Status.TLS.AcceptedSecretName = "" }}, acl: "a", users: "u",
			tlsWait: "status.tls.acceptedSecretName is not set: waiting for the tls-controller (TLSReady is not reported yet: is the tls-controller running?)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vc := &ValkeyCluster{}
			for _, m := range tc.mutate {
				m(vc)
			}
			for _, c := range []struct {
				field, want, wait, reason string
				of                        func(*ValkeyCluster) (string, error)
			}{
				{"acl", tc.acl, tc.aclWait, ReasonWaitingForACL, ACLSecretOf},
				{"system users", tc.users, tc.usersWait, ReasonWaitingForACL, SystemUsersSecretOf},
				{"tls", tc.tls, tc.tlsWait, ReasonWaitingForTLS, AcceptedTLSSecretOf},
			} {
				got, err := c.of(vc)
				var np *NotPublishedError
				switch {
				case c.wait == "" && (err != nil || got != c.want):
					t.Errorf("%s: got %q, %v; want %q", c.field, got, err, c.want)
				case c.wait != "" && (!errors.As(err, &np) || err.Error() != c.wait || np.Reason != c.reason):
					t.Errorf("%s: got %q, %v; want the error %q (reason %s)", c.field, got, err, c.wait, c.reason)
				}
			}
		})
	}
}
