//go:build e2e

package security

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/yaml"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/images"
)

// The reference's containers example (docs/examples/containers.yaml: a server patch and
// a sidecar that gives no securityContext) in a namespace that enforces the restricted
// Pod Security Standard: the operator fills in the sidecar's restricted settings, so
// every member's pod is admitted and the cluster gets Ready.
func TestRestrictedNamespace(t *testing.T) {
	f := framework.NewFeature(suite, "the reference's sidecar in a restricted namespace").
		Assess("the cluster gets Ready with its sidecars running", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns := framework.Namespace(ctx)
			var nso corev1.Namespace
			if err := k.Client.Get(ctx, client.ObjectKey{Name: ns}, &nso); err != nil {
				t.Fatal(err)
			}
			patch := client.MergeFrom(nso.DeepCopy())
			if nso.Labels == nil {
				nso.Labels = map[string]string{}
			}
			nso.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
			nso.Labels["pod-security.kubernetes.io/enforce-version"] = "latest"
			if err := k.Client.Patch(ctx, &nso, patch); err != nil {
				t.Fatal(err)
			}

			raw, err := os.ReadFile(filepath.Join(k.Paths.RepoRoot, "docs", "examples", "containers.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var example v1alpha1.ValkeyCluster
			if err := yaml.Unmarshal(raw, &example); err != nil {
				t.Fatal(err)
			}
			// The local Kubernetes pulls nothing: the sidecar runs the toolbox image
			// (busybox too), with the example's command and nothing else changed.
			toolbox, err := k.ComponentImage(images.ComponentToolbox)
			if err != nil {
				t.Fatal(err)
			}
			vc := framework.NewValkeyCluster(ns, example.Name, 3, 0)
			vc.Spec.Containers = example.Spec.Containers
			sidecar := ""
			for i := range vc.Spec.Containers {
				if c := &vc.Spec.Containers[i]; c.Image != "" {
					if c.SecurityContext != nil {
						t.Fatalf("the example's sidecar %s sets a securityContext: the test is about one that does not", c.Name)
					}
					c.Image, sidecar = toolbox.Ref, c.Name
				}
			}
			if sidecar == "" {
				t.Fatal("the example has no sidecar")
			}
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatalf("create: %v", err)
			}
			k.WaitClusterReady(ctx, t, vc, 4*time.Minute)

			var pods corev1.PodList
			if err := k.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelInstance: vc.Name}); err != nil {
				t.Fatal(err)
			}
			members := 0
			for _, p := range pods.Items {
				if p.Labels[v1alpha1.LabelName] != v1alpha1.AppName {
					continue
				}
				members++
				running := false
				for _, s := range p.Status.ContainerStatuses {
					if s.Name == sidecar && s.State.Running != nil {
						running = true
					}
				}
				if !running {
					t.Errorf("pod %s: sidecar %s not running: %+v", p.Name, sidecar, p.Status.ContainerStatuses)
				}
			}
			if members != 3 {
				t.Errorf("%d member pods, want 3", members)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
