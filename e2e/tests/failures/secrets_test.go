//go:build e2e

package failures

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// The user with a password and its Secret in TestSecretsDeleted.
const (
	appUser    = "app"
	appSecret  = "vk-app-password"
	appKey     = "password"
	certSecret = "vk-cert"
)

// TestSecretsDeleted deletes, one after the other, the Secrets an ACL cluster depends on:
// the system users Secret (kept by its finalizer: the members only know its passwords),
// the aclfile Secret (rendered again), and a user's password Secret (the user keeps its
// previous rules, ACLReady says why).
func TestSecretsDeleted(t *testing.T) {
	var k *framework.Cluster
	var vc *v1alpha1.ValkeyCluster
	password := framework.RandomSuffix(24)
	need := func(t *testing.T) {
		if vc == nil {
			t.Fatal("the cluster of the feature was not created")
		}
	}
	f := framework.NewFeature(suite, "secrets deleted").
		Assess("the system users Secret is kept and the cluster stays operable", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: framework.Namespace(ctx), Name: appSecret},
				StringData: map[string]string{appKey: password}}
			if err := framework.ClusterFrom(ctx, t).Client.Create(ctx, s); err != nil {
				t.Fatal(err)
			}
			k, vc = newCluster(ctx, t, 1, 1, func(_ *framework.Cluster, vc *v1alpha1.ValkeyCluster) {
				vc.Spec.Users = append(vc.Spec.Users, v1alpha1.UserSpec{Name: appUser,
					PasswordSecret: &v1alpha1.PasswordSecretRef{Name: appSecret, Keys: []string{appKey}}, Permissions: "+@all ~*"})
			})
			name := v1alpha1.SystemUsersSecretName(vc.Name)
			sys := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: vc.Namespace, Name: name}}
			if err := k.Client.Delete(ctx, sys); err != nil {
				t.Fatal(err)
			}
			waitEvent(ctx, t, k, vc.Namespace, "SystemUsersSecretDeleted", corev1.EventTypeWarning, 30*time.Second, name)
			if err := k.Client.Get(ctx, client.ObjectKeyFromObject(sys), sys); err != nil {
				t.Fatalf("Secret %s: %v", name, err)
			}
			if sys.DeletionTimestamp.IsZero() || len(sys.Finalizers) == 0 {
				t.Errorf("Secret %s: deletion %v, finalizers %v: want it terminating and held", name, sys.DeletionTimestamp, sys.Finalizers)
			}
			t.Logf("Secret %s is terminating, held by %v", name, sys.Finalizers)
			time.Sleep(5 * time.Second)
			if err := k.Client.Get(ctx, client.ObjectKeyFromObject(vc), vc); err != nil {
				t.Fatal(err)
			}
			if ok, why := framework.ClusterReady(vc); !ok {
				t.Errorf("the cluster is not Ready after the Secret was deleted: %s", why)
			}
			// Still operable: a new replica joins with the passwords of the held Secret.
			start := time.Now()
			k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) { s.ReplicasPerShard = ptr.To(int32(2)) })
			k.WaitClusterReady(ctx, t, vc, 4*time.Minute)
			t.Logf("scaled to 2 replicas %s after the change", time.Since(start).Round(100*time.Millisecond))
			if n := len(k.Members(ctx, t, vc)); n != 3 {
				t.Errorf("%d members, want 3", n)
			}
			checkLogin(ctx, t, k, vc, password)
			return ctx
		}).
		Assess("the aclfile Secret is rendered again and the users keep working", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			need(t)
			acl := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: vc.Namespace, Name: v1alpha1.ACLSecretName(vc.Name)}}
			if err := k.Client.Get(ctx, client.ObjectKeyFromObject(acl), acl); err != nil {
				t.Fatal(err)
			}
			uid := acl.UID
			start := time.Now()
			if err := k.Client.Delete(ctx, acl); err != nil {
				t.Fatal(err)
			}
			err := framework.WaitFor(ctx, k.Client, acl, 30*time.Second, "be created again", func(s *corev1.Secret) (bool, string) {
				return s.UID != uid && strings.Contains(string(s.Data[v1alpha1.ACLFileKey]), "user "+appUser+" on"), "UID " + string(s.UID)
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("Secret %s created again %s after it was deleted", acl.Name, time.Since(start).Round(10*time.Millisecond))
			checkLogin(ctx, t, k, vc, password)
			if err := framework.WaitFor(ctx, k.Client, vc, 30*time.Second, "keep ACLReady=True",
				framework.ConditionIs(v1alpha1.ConditionACLReady, metav1.ConditionTrue, "")); err != nil {
				t.Error(err)
			}
			return ctx
		}).
		Assess("a user whose password Secret is deleted keeps its password, ACLReady says why", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			need(t)
			if err := k.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: vc.Namespace, Name: appSecret}}); err != nil {
				t.Fatal(err)
			}
			if err := framework.WaitFor(ctx, k.Client, vc, 30*time.Second, "report ACLReady=False PasswordMissing",
				framework.ConditionIs(v1alpha1.ConditionACLReady, metav1.ConditionFalse, v1alpha1.ReasonPasswordMissing)); err != nil {
				t.Fatal(err)
			}
			c := condition(vc, v1alpha1.ConditionACLReady)
			t.Logf("ACLReady=%s %s: %s", c.Status, c.Reason, c.Message)
			if !strings.Contains(c.Message, appUser) || !strings.Contains(c.Message, appSecret) {
				t.Errorf("ACLReady names neither the user %s nor the Secret %s: %s", appUser, appSecret, c.Message)
			}
			waitEvent(ctx, t, k, vc.Namespace, v1alpha1.ReasonPasswordMissing, corev1.EventTypeWarning, 15*time.Second, appUser)
			time.Sleep(2 * time.Second)
			checkLogin(ctx, t, k, vc, password)
			if ok, why := framework.ClusterReady(vc); !ok {
				t.Errorf("the cluster is not Ready: %s", why)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// checkLogin checks on every member that the app user logs in with password and may
// write, and that the suites' test user still works.
func checkLogin(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, password string) {
	t.Helper()
	for _, addr := range k.MemberAddrs(ctx, t, vc) {
		for user, pw := range map[string]string{appUser: password, framework.TestUser: "any"} {
			c, err := valkey.Dial(ctx, valkey.Options{Addr: addr, Username: user, Password: pw, DialTimeout: 2 * time.Second})
			if err != nil {
				t.Errorf("%s cannot log in on %s: %v", user, addr, err)
				continue
			}
			if err := c.Ping(ctx); err != nil {
				t.Errorf("%s on %s: PING: %v", user, addr, err)
			}
			c.Close()
		}
	}
}

// TestTLSSecretDeleted deletes the user's certificate Secret of a cluster with TLS: the
// members keep serving the accepted copy ({cluster}-tls-accepted), and TLSReady=False
// says the Secret is missing and which certificate is still served.
func TestTLSSecretDeleted(t *testing.T) {
	f := framework.NewFeature(suite, "TLS secret deleted").
		Assess("members keep serving the accepted certificate; TLSReady says the Secret is missing", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			ns := framework.Namespace(ctx)
			ca, data := testCertificate(t, []string{"vk." + ns + ".svc", "vk." + ns + ".svc.cluster.local"})
			k := framework.ClusterFrom(ctx, t)
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: certSecret}, Type: corev1.SecretTypeTLS, Data: data}
			if err := k.Client.Create(ctx, s); err != nil {
				t.Fatal(err)
			}
			_, vc := newCluster(ctx, t, 1, 1, func(_ *framework.Cluster, vc *v1alpha1.ValkeyCluster) {
				vc.Spec.TLS = &v1alpha1.TLSSpec{Certificate: &v1alpha1.CertificateSpec{SecretName: certSecret}}
			})
			if vc.Status.TLS == nil {
				t.Fatal("no status.tls on a Ready cluster with TLS")
			}
			fp := vc.Status.TLS.Fingerprint
			pool := x509.NewCertPool()
			pool.AddCert(ca)
			cfg := valkey.VerifyChainOnly(pool)
			checkServed(ctx, t, k, vc, cfg, fp)

			if err := k.Client.Delete(ctx, s); err != nil {
				t.Fatal(err)
			}
			if err := framework.WaitFor(ctx, k.Client, vc, 30*time.Second, "report TLSReady=False SecretMissing",
				framework.ConditionIs(v1alpha1.ConditionTLSReady, metav1.ConditionFalse, v1alpha1.ReasonSecretMissing)); err != nil {
				t.Fatal(err)
			}
			c := condition(vc, v1alpha1.ConditionTLSReady)
			t.Logf("TLSReady=%s %s: %s", c.Status, c.Reason, c.Message)
			if !strings.Contains(c.Message, certSecret) || !strings.Contains(c.Message, fp) {
				t.Errorf("TLSReady names neither the Secret %s nor the certificate still served (%s): %s", certSecret, fp, c.Message)
			}
			waitEvent(ctx, t, k, vc.Namespace, v1alpha1.ReasonSecretMissing, corev1.EventTypeWarning, 15*time.Second, certSecret)
			var accepted corev1.Secret
			if err := k.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: v1alpha1.TLSSecretName(vc.Name)}, &accepted); err != nil {
				t.Errorf("the accepted copy: %v", err)
			}
			time.Sleep(5 * time.Second)
			checkServed(ctx, t, k, vc, cfg, fp)
			if ok, why := framework.ClusterReady(vc); !ok {
				t.Errorf("the cluster is not Ready: %s", why)
			}
			if vc.Status.TLS == nil || vc.Status.TLS.Fingerprint != fp {
				t.Errorf("status.tls = %+v, want the fingerprint still served %s", vc.Status.TLS, fp)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// checkServed checks with a fresh handshake that every member serves the certificate
// of fingerprint fp and answers a TLS client.
func checkServed(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, cfg *tls.Config, fp string) {
	t.Helper()
	for _, addr := range k.MemberAddrs(ctx, t, vc) {
		cert, err := valkey.ServedCertificate(ctx, addr, cfg, 2*time.Second)
		if err != nil {
			t.Errorf("%s: %v", addr, err)
			continue
		}
		if got := valkey.Fingerprint(cert); got != fp {
			t.Errorf("%s serves %s, want %s", addr, got, fp)
		}
		c, err := valkey.Dial(ctx, valkey.Options{Addr: addr, Username: framework.TestUser, Password: "any", TLS: cfg})
		if err != nil {
			t.Errorf("%s: TLS client: %v", addr, err)
			continue
		}
		if err := c.Ping(ctx); err != nil {
			t.Errorf("%s: PING over TLS: %v", addr, err)
		}
		c.Close()
	}
}

// testCertificate makes a CA and a certificate signed by it for names (server and
// client authentication), valid from an hour ago for a day, and returns the CA and the
// Secret data (ca.crt, tls.crt, tls.key).
func testCertificate(t *testing.T, names []string) (*x509.Certificate, map[string][]byte) {
	t.Helper()
	now := time.Now()
	caKey, key := newKey(t), newKey(t)
	caTmpl := &x509.Certificate{SerialNumber: serial(t), Subject: pkix.Name{CommonName: "failures e2e CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: serial(t), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return ca, map[string][]byte{
		"ca.crt":  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"tls.key": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func serial(t *testing.T) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
