//go:build e2e

package localkube

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const svcName = "vk"

type (
	serviceKey struct{}
	clientKey  struct{}
)

func TestClusterDNS(t *testing.T) {
	f := framework.NewFeature(suite, "cluster DNS").
		Setup(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns := framework.Namespace(ctx)
			pod := valkeyPod(ns, svcName, valkeyImage(t, k))
			must(t, k.Client.Create(ctx, pod), "create pod")
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svcName},
				Spec: corev1.ServiceSpec{
					Selector: map[string]string{"app": svcName},
					Ports:    []corev1.ServicePort{{Name: "valkey", Port: framework.ValkeyPort, TargetPort: intstr.FromString("valkey")}},
				},
			}
			must(t, k.Client.Create(ctx, svc), "create Service")
			must(t, framework.WaitFor(ctx, k.Client, pod, podTimeout, "become Ready", framework.PodReady), "Service backend")
			// The client runs on another node than the server, so the query and the
			// connection cross the node network.
			ctx = context.WithValue(ctx, clientKey{}, otherNode(nodeSet(ctx, t, k), pod.Spec.NodeName))
			return context.WithValue(ctx, serviceKey{}, svc)
		}).
		Assess("a Service name resolves from another pod and reaches its backend", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns, svc := framework.Namespace(ctx), ctx.Value(serviceKey{}).(*corev1.Service)
			fqdn := fmt.Sprintf("%s.%s.svc.cluster.local", svcName, ns)
			// kube-proxy programs the Service within a moment of the endpoint being Ready:
			// the PING is retried for up to 20 s, the lookup is not.
			script := fmt.Sprintf(`nslookup %s || exit 10
for i in $(seq 1 40); do out=$(valkey-cli -h %s ping 2>&1) && [ "$out" = PONG ] && { echo "PONG after $i tries"; exit 0; }; sleep 0.5; done
echo "$out"; exit 11`, fqdn, svcName)
			start := time.Now()
			res, err := k.RunToolbox(ctx, framework.ToolboxPod{Namespace: ns, Name: "resolve", Node: ctx.Value(clientKey{}).(string), Script: script}, podTimeout)
			must(t, err, "run toolbox")
			t.Logf("toolbox on %s (%s):\n%s", ctx.Value(clientKey{}), since(start), res.Output)
			if res.ExitCode != 0 {
				t.Fatalf("exit code %d (10: lookup failed, 11: no PONG through the Service)", res.ExitCode)
			}
			if !strings.Contains(res.Output, svc.Spec.ClusterIP) {
				t.Errorf("lookup of %s did not answer the Service's ClusterIP %s", fqdn, svc.Spec.ClusterIP)
			}
			return ctx
		}).
		Assess("a name outside the cluster does not resolve", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			res, err := k.RunToolbox(ctx, framework.ToolboxPod{Namespace: framework.Namespace(ctx), Name: "outside", Script: "nslookup example.com"}, podTimeout)
			must(t, err, "run toolbox")
			t.Logf("nslookup example.com (exit %d):\n%s", res.ExitCode, res.Output)
			if res.ExitCode == 0 || strings.Contains(res.Output, "Name:") {
				t.Errorf("example.com resolved inside the cluster: nothing may leave the machine")
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// nodeSet returns the worker node names as a set.
func nodeSet(ctx context.Context, t *testing.T, k *framework.Cluster) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range nodeNames(ctx, t, k) {
		out[n] = n
	}
	return out
}
