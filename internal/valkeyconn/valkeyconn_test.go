package valkeyconn

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// secrets is a client.Reader holding Secrets by name (one namespace).
type secrets map[string]*corev1.Secret

func (s secrets) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	got, ok := s[key.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, key.Name)
	}
	got.DeepCopyInto(obj.(*corev1.Secret))
	return nil
}

func (s secrets) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not listed")
}

func testCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestForClusterReadsTheSecretsTheStatusNames: the credentials come from the Secrets
// status.acl and status.tls name, whatever their names; while one is not named, the
// error says which field and what its producer reports, and no Secret is guessed.
func TestForClusterReadsTheSecretsTheStatusNames(t *testing.T) {
	r := secrets{
		"published-users": {Data: map[string][]byte{v1alpha1.UserOperator: []byte("pw")}},
		"published-copy":  {Data: map[string][]byte{"ca.crt": testCA(t)}},
		// The names of the convention hold other data: reading them would be wrong.
		"vk-system-users": {Data: map[string][]byte{v1alpha1.UserOperator: []byte("guessed")}},
		"vk-tls-accepted": {Data: map[string][]byte{"ca.crt": []byte("guessed")}},
	}
	cluster := func(mutate ...func(*v1alpha1.ValkeyCluster)) *v1alpha1.ValkeyCluster {
		vc := &v1alpha1.ValkeyCluster{}
		vc.Name, vc.Namespace = "vk", "ns"
		vc.Spec.TLS = &v1alpha1.TLSSpec{Certificate: &v1alpha1.CertificateSpec{SecretName: "user-cert"}}
		vc.Status.ACL = &v1alpha1.ACLStatus{SecretName: "published-acl", SystemUsersSecretName: "published-users"}
		vc.Status.TLS = &v1alpha1.TLSStatus{SecretName: "user-cert", AcceptedSecretName: "published-copy"}
		for _, m := range mutate {
			m(vc)
		}
		return vc
	}
	for _, tc := range []struct {
		name string
		vc   *v1alpha1.ValkeyCluster
		// wait is part of the error, "" when the credentials resolve.
		wait string
	}{
		{name: "published", vc: cluster()},
		{name: "without TLS", vc: cluster(func(vc *v1alpha1.ValkeyCluster) { vc.Spec.TLS, vc.Status.TLS = nil, nil })},
		{name: "no status.acl", vc: cluster(func(vc *v1alpha1.ValkeyCluster) { vc.Status.ACL = nil }),
			wait: "status.acl.systemUsersSecretName is not set: waiting for the acl-controller"},
		{name: "no accepted copy named", vc: cluster(func(vc *v1alpha1.ValkeyCluster) { vc.Status.TLS.AcceptedSecretName = "" }),
			wait: "status.tls.acceptedSecretName is not set: waiting for the tls-controller"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cred, err := ForCluster(context.Background(), r, tc.vc)
			if tc.wait == "" {
				if err != nil || cred.Password != "pw" || (tc.vc.Spec.TLS != nil) != (cred.TLS != nil) {
					t.Fatalf("ForCluster = %+v, %v; want the published password and TLS as the spec says", cred, err)
				}
				return
			}
			var np *v1alpha1.NotPublishedError
			if !errors.Is(err, ErrNotReady) || !errors.As(err, &np) || !strings.Contains(err.Error(), tc.wait) {
				t.Fatalf("ForCluster error = %v; want ErrNotReady with %q", err, tc.wait)
			}
		})
	}
}
