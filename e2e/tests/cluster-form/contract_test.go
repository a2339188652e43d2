//go:build e2e

package clusterform

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// TestStatusContract runs a cluster with a user, so that every controller writes its
// part, and checks each status entry of the cluster and its members against the owner
// docs/status-contract.md names (TLS entries are checked by the tls suite).
func TestStatusContract(t *testing.T) {
	f := framework.NewFeature(suite, "status contract").
		Assess("every status entry is written by the controller the contract names", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "contract", 1, 1)
			vc.Spec.Users = append(vc.Spec.Users, v1alpha1.UserSpec{Name: "reader", NoPass: true,
				Commands: &v1alpha1.CommandsSpec{Allow: []string{"@read"}}})
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
			k.CheckStatusContract(ctx, t, vc)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
