//go:build e2e

package localkube

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

func TestNodes(t *testing.T) {
	f := framework.NewFeature(suite, "worker nodes", framework.WithoutNamespace()).
		Assess("every worker node is Ready and schedulable", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			nodes, err := k.WorkerNodes(ctx)
			must(t, err, "list worker nodes")
			if got, want := len(nodes), k.Provider.Workers(); got != want {
				t.Fatalf("%d worker nodes, want %d", got, want)
			}
			for i := range nodes {
				n := &nodes[i]
				if !framework.NodeSchedulable(n) {
					t.Errorf("node %s is not Ready and schedulable: %s", n.Name, framework.DescribeNode(n))
				}
				t.Logf("node %s %s kubelet %s runtime %s", n.Name, internalIP(n), n.Status.NodeInfo.KubeletVersion, n.Status.NodeInfo.ContainerRuntimeVersion)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// internalIP returns the node's InternalIP address.
func internalIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}
