package localkube

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// RESTConfig returns the admin client configuration of the running cluster.
func (c Config) RESTConfig() (*rest.Config, error) {
	c, err := c.WithDefaults()
	if err != nil {
		return nil, err
	}
	return clientcmd.BuildConfigFromFlags("", c.Kubeconfig())
}

// waitHealthy waits until every node is Ready and schedulable, the default service
// account exists, the default StorageClass is there and CoreDNS answers.
func (c Config) waitHealthy(ctx context.Context, timeout time.Duration, phase func(string)) error {
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, timeout, 200*time.Millisecond, "nodes Ready", func() (bool, error) {
		return nodesReady(ctx, cs, c.Nodes)
	}); err != nil {
		return err
	}
	phase("nodes ready")
	checks := []struct {
		what string
		fn   func() (bool, error)
	}{
		{"default service account", func() (bool, error) {
			_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
			return err == nil, err
		}},
		{"default StorageClass", func() (bool, error) {
			_, err := cs.StorageV1().StorageClasses().Get(ctx, StorageClass, metav1.GetOptions{})
			return err == nil, err
		}},
		{"CoreDNS", func() (bool, error) {
			conn, err := net.DialTimeout("tcp", net.JoinHostPort(BridgeIP, "53"), time.Second)
			if err != nil {
				return false, err
			}
			conn.Close()
			return true, nil
		}},
	}
	if c.enforcesNetworkPolicy() {
		checks = append(checks, struct {
			what string
			fn   func() (bool, error)
		}{"NetworkPolicy engine", func() (bool, error) { return netpolReady(ctx, cs, c.Nodes) }})
	}
	for _, ch := range checks {
		if err := waitFor(ctx, timeout, 200*time.Millisecond, ch.what, ch.fn); err != nil {
			return err
		}
		phase(ch.what)
	}
	return nil
}

// nodesReady reports whether want nodes are Ready and carry no not-ready or unreachable
// taint (the node lifecycle controller removes them shortly after Ready).
func nodesReady(ctx context.Context, cs kubernetes.Interface, want int) (bool, error) {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	ready := 0
	var notReady []string
	for _, n := range nodes.Items {
		if nodeReady(n) {
			ready++
		} else {
			notReady = append(notReady, n.Name)
		}
	}
	if ready < want {
		return false, fmt.Errorf("%d of %d nodes ready (waiting: %s)", ready, want, strings.Join(notReady, ", "))
	}
	return true, nil
}

func nodeReady(n corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
