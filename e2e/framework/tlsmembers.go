package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// ServedFingerprints opens a new TLS connection to every member of vc and returns the
// fingerprint of the certificate each presents (or "error: ..."), by address. cfg
// verifies the chain (valkey.VerifyChainOnly).
func (k *Cluster) ServedFingerprints(ctx context.Context, vc *v1alpha1.ValkeyCluster, cfg *tls.Config) map[string]string {
	var list v1alpha1.ValkeyNodeList
	out := map[string]string{}
	if err := k.Client.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels{v1alpha1.LabelInstance: vc.Name}); err != nil {
		out["list"] = err.Error()
		return out
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range list.Items {
		a := net.JoinHostPort(m.Status.PodIP, strconv.Itoa(ValkeyPort))
		wg.Go(func() {
			c, err := valkey.ServedCertificate(ctx, a, cfg, 2*time.Second)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				out[a] = "error: " + err.Error()
				return
			}
			out[a] = valkey.Fingerprint(c)
		})
	}
	wg.Wait()
	return out
}

// AllServe tells whether the n members of served (ServedFingerprints) all present the
// certificate of fingerprint fp.
func AllServe(served map[string]string, n int, fp string) bool {
	if len(served) != n {
		return false
	}
	for _, v := range served {
		if v != fp {
			return false
		}
	}
	return true
}

// DialMemberTLS connects to a member as the test user, over TLS.
func DialMemberTLS(ctx context.Context, m v1alpha1.ValkeyNode, cfg *tls.Config) (*valkey.Client, error) {
	return valkey.Dial(ctx, valkey.Options{Addr: net.JoinHostPort(m.Status.PodIP, strconv.Itoa(ValkeyPort)),
		Username: TestUser, Password: "any", TLS: cfg})
}

// WatchClusterState samples CLUSTER INFO on every member of vc every 200 ms over
// connections opened before (as the test user, over TLS when cfg is set): a sample
// fails when a member does not answer cluster_state:ok.
func (k *Cluster) WatchClusterState(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster, cfg *tls.Config) *Sampler {
	t.Helper()
	conns := map[string]*valkey.Client{}
	members := k.Members(ctx, t, vc)
	for _, m := range members {
		c, err := DialMemberTLS(ctx, m, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		conns[m.Name] = c
	}
	name := fmt.Sprintf("cluster_state of the %d members (CLUSTER INFO every 200 ms)", len(members))
	return StartSampler(name, 200*time.Millisecond, func(ctx context.Context) error {
		var errs []error
		for name, c := range conns {
			info, err := c.ClusterInfo(ctx)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			case info["cluster_state"] != "ok":
				errs = append(errs, fmt.Errorf("%s: cluster_state %s", name, info["cluster_state"]))
			}
		}
		return errors.Join(errs...)
	})
}

// PEMCertificates parses every CERTIFICATE block of b.
func PEMCertificates(b []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return out, nil
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
}
