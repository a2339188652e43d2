//go:build e2e

package security

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// components are the operator's Deployments (their pods' app.kubernetes.io/component).
var components = []string{"cluster-controller", "node-controller", "acl-controller", "tls-controller", "backup-controller", "webhooks"}

// metricsClient scrapes the components' HTTPS metrics endpoints with a service account
// token; they serve self-signed certificates, which a scraper inside the cluster skips
// verifying too (the chart's ServiceMonitor does).
var metricsClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed, see above
}}

// readerToken returns a token of a service account of ns, bound to the chart's
// metrics-reader ClusterRole when bind is set.
func readerToken(ctx context.Context, t *testing.T, k *framework.Cluster, ns, name string, bind bool) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := k.Client.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if bind {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: framework.OperatorRelease + "-metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
		}
		if err := k.Client.Create(ctx, crb); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k.Client.Delete(context.Background(), crb) })
	}
	tr, err := k.Clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// componentPods are the running pods of a component.
func componentPods(ctx context.Context, t *testing.T, k *framework.Cluster, component string) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := k.Client.List(ctx, &pods, client.InNamespace(framework.OperatorNamespace),
		client.MatchingLabels{"app.kubernetes.io/component": component}); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.Status.PodIP != "" && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no running pod of %s", component)
	}
	return out
}

// getMetrics GETs a pod's /metrics with token ("" for none): the HTTP status and body.
func getMetrics(ctx context.Context, ip, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+ip+":8080/metrics", nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := metricsClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	return resp.StatusCode, b.String(), sc.Err()
}

// metricValue is the value of an unlabelled series in a metrics page.
func metricValue(page, name string) (float64, error) {
	for _, line := range strings.Split(page, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("no %s", name)
}

// rss sums process_resident_memory_bytes over a component's pods.
func rss(ctx context.Context, t *testing.T, k *framework.Cluster, component, token string) float64 {
	t.Helper()
	var total float64
	for _, p := range componentPods(ctx, t, k, component) {
		code, page, err := getMetrics(ctx, p.Status.PodIP, token)
		if err != nil || code != http.StatusOK {
			t.Fatalf("metrics of %s: %d %v", p.Name, code, err)
		}
		v, err := metricValue(page, "process_resident_memory_bytes")
		if err != nil {
			t.Fatalf("metrics of %s: %v", p.Name, err)
		}
		total += v
	}
	return total
}

func TestMetricsNeedAuthorization(t *testing.T) {
	f := framework.NewFeature(suite, "metrics over HTTPS to authorized clients").
		Assess("no token, a token without the metrics-reader role, the role", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns := framework.Namespace(ctx)
			anonymous := readerToken(ctx, t, k, ns, "stranger", false)
			reader := readerToken(ctx, t, k, ns, "scraper", true)
			for _, c := range components {
				for _, p := range componentPods(ctx, t, k, c) {
					if code, _, err := getMetrics(ctx, p.Status.PodIP, ""); err != nil || code != http.StatusUnauthorized {
						t.Errorf("%s without a token: %d %v, want 401", p.Name, code, err)
					}
					if code, _, err := getMetrics(ctx, p.Status.PodIP, anonymous); err != nil || code != http.StatusForbidden {
						t.Errorf("%s with an unbound token: %d %v, want 403", p.Name, code, err)
					}
					// The binding may take a moment to reach the authorizer's cache.
					var code int
					var err error
					for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
						if code, _, err = getMetrics(ctx, p.Status.PodIP, reader); err == nil && code == http.StatusOK {
							break
						}
					}
					if err != nil || code != http.StatusOK {
						t.Errorf("%s with the metrics-reader's token: %d %v, want 200", p.Name, code, err)
					}
					plain, err := http.Get("http://" + p.Status.PodIP + ":8080/metrics") //nolint:noctx // a refused plain request
					if err == nil {
						plain.Body.Close()
						if plain.StatusCode == http.StatusOK {
							t.Errorf("%s serves metrics in plain HTTP", p.Name)
						}
					}
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// unrelatedSecrets is how many Secrets the memory test creates: the figure.
const unrelatedSecrets = 10000

func TestUnrelatedSecretsCostNoMemory(t *testing.T) {
	f := framework.NewFeature(suite, "10,000 unrelated Secrets grow no component's memory").
		Assess("RSS before and after, at most 10 MiB more per component", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns := framework.Namespace(ctx)
			token := readerToken(ctx, t, k, ns, "scraper", true)
			time.Sleep(5 * time.Second) // the binding reaches the authorizers
			before := map[string]float64{}
			for _, c := range components {
				before[c] = rss(ctx, t, k, c, token)
			}
			start := time.Now()
			createSecrets(ctx, t, k, ns, unrelatedSecrets)
			t.Logf("%d Secrets created in %s", unrelatedSecrets, time.Since(start).Round(time.Second))
			// Informers that did cache them would have them by now; give the Go heap the
			// time of a GC cycle or two to settle.
			time.Sleep(30 * time.Second)
			for _, c := range components {
				after := rss(ctx, t, k, c, token)
				growth := (after - before[c]) / (1 << 20)
				t.Logf("%s: RSS %.1f MiB before, %.1f MiB after, %+.1f MiB", c, before[c]/(1<<20), after/(1<<20), growth)
				if growth > 10 {
					t.Errorf("%s grew by %.1f MiB with %d unrelated Secrets (limit 10 MiB)", c, growth, unrelatedSecrets)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// createSecrets creates n small Secrets in ns, sixteen at a time; the namespace's deletion
// takes them away.
func createSecrets(ctx context.Context, t *testing.T, k *framework.Cluster, ns string, n int) {
	t.Helper()
	// The framework's clients keep to 50 requests/s; these are many and cheap.
	rc := rest.CopyConfig(k.REST)
	rc.QPS, rc.Burst = 400, 400
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var failed atomic.Int32
	next := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				s := &corev1.Secret{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("unrelated-%05d", i)},
					Data:       map[string][]byte{"token": []byte(strings.Repeat("x", 256))},
				}
				if _, err := cs.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					failed.Add(1)
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if f := failed.Load(); f > 0 {
		t.Fatalf("%d of %d Secrets not created", f, n)
	}
}
