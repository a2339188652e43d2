package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/checker"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// ClusterTLS returns the client TLS configuration of a cluster with TLS: it trusts the
// ca.crt of the certificate the operator accepted ({cluster}-tls-accepted).
func (k *Cluster) ClusterTLS(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster) *tls.Config {
	t.Helper()
	var s corev1.Secret
	if err := k.Client.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: v1alpha1.TLSSecretName(vc.Name)}, &s); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.Data["ca.crt"]) {
		t.Fatalf("Secret %s: ca.crt holds no certificate", s.Name)
	}
	return valkey.VerifyChainOnly(pool)
}

// AdminTLS is Admin over TLS: a connection to one member as the operator's own user.
func (k *Cluster) AdminTLS(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster, addr string, cfg *tls.Config) *valkey.Client {
	t.Helper()
	var s corev1.Secret
	if err := k.Client.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: v1alpha1.SystemUsersSecretName(vc.Name)}, &s); err != nil {
		t.Fatal(err)
	}
	c, err := valkey.Dial(ctx, valkey.Options{Addr: addr, Username: v1alpha1.UserOperator, Password: string(s.Data[v1alpha1.UserOperator]), TLS: cfg})
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	return c
}

// StartCheckerWith starts the write-checker with options: empty Addrs are the members'
// addresses, an empty Username is the test user. Set TLS for a cluster with TLS.
func (k *Cluster) StartCheckerWith(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster, o checker.Options) *checker.Checker {
	t.Helper()
	if len(o.Addrs) == 0 {
		o.Addrs = k.MemberAddrs(ctx, t, vc)
	}
	if o.Username == "" {
		o.Username, o.Password = TestUser, "any"
	}
	ch, err := checker.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if wait, why := ch.StartWait(); why != nil {
		t.Logf("write-checker: its first command was retried for %s (first error: %v)", wait.Round(10*time.Millisecond), why)
	}
	return ch
}
