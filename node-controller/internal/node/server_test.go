package node

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/operator"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
)

func TestFallbackReader(t *testing.T) {
	managed := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "demo-system-users", Namespace: "ns"}}
	users := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "demo-tls", Namespace: "ns"}}
	cached := fake.NewClientBuilder().WithScheme(operator.Scheme()).WithObjects(managed).Build()
	api := fake.NewClientBuilder().WithScheme(operator.Scheme()).WithObjects(users).Build()
	r := FallbackReader{Primary: cached, Secondary: api}
	for _, name := range []string{"demo-system-users", "demo-tls"} {
		if err := r.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, &corev1.Secret{}); err != nil {
			t.Errorf("get %s: %v", name, err)
		}
	}
	if err := r.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "nope"}, &corev1.Secret{}); err == nil {
		t.Error("a missing Secret was found")
	}
}

func TestPoolDialerWithoutCredentials(t *testing.T) {
	d := &PoolDialer{Secrets: fake.NewClientBuilder().WithScheme(operator.Scheme()).Build(), Pool: &valkeyconn.Pool{}}
	_, err := d.Dial(context.Background(), testNode(), "10.0.0.1")
	if !errors.Is(err, valkeyconn.ErrNotReady) || !strings.Contains(err.Error(), "demo-system-users") {
		t.Errorf("err = %v, want the missing Secret named", err)
	}
}

func TestServerRunning(t *testing.T) {
	if !serverRunning(testPod(corev1.PodRunning, corev1.RestartPolicyAlways, running)) {
		t.Error("a running server is not running")
	}
	noIP := testPod(corev1.PodRunning, corev1.RestartPolicyAlways, running)
	noIP.Status.PodIP = ""
	for name, p := range map[string]*corev1.Pod{
		"nil": nil, "no IP": noIP, "crashing": testPod(corev1.PodRunning, corev1.RestartPolicyAlways, crashing),
		"failed": testPod(corev1.PodFailed, corev1.RestartPolicyNever, killed),
	} {
		if serverRunning(p) {
			t.Errorf("%s: counted as running, so the controller would dial it", name)
		}
	}
}

func TestNodeOf(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "demo-a-0", Labels: map[string]string{
		v1alpha1.LabelNode: "demo-a", v1alpha1.LabelManagedBy: v1alpha1.ManagedBy}}}
	reqs := nodeOf(context.Background(), pod)
	if len(reqs) != 1 || reqs[0].Namespace != "ns" || reqs[0].Name != "demo-a" {
		t.Errorf("requests = %v", reqs)
	}
	pod.Labels[v1alpha1.LabelManagedBy] = "someone-else"
	if reqs := nodeOf(context.Background(), pod); len(reqs) != 0 {
		t.Errorf("a foreign object maps to %v", reqs)
	}
}
