//go:build e2e

package security

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/images"
)

// The flood of issue 28: objects a namespace user may create in their own namespace,
// labelled as the operator labels a cluster's objects, each as large as the API server
// takes.
const (
	floodSecrets    = 200
	floodConfigMaps = 200
	floodPods       = 100
	// floodEach is how many Services, NetworkPolicies and PodDisruptionBudgets.
	floodEach = 20
	// floodBlob is the content of each Secret and ConfigMap (the API server's limit is 1 MiB).
	floodBlob = 900 << 10
	// floodAnnotation is the annotation of every other object (an object's annotations
	// may hold 256 KiB in all).
	floodAnnotation = 200 << 10
	// floodWorkers create the objects in parallel.
	floodWorkers = 8
	// floodRSSGrowth is how much the operator's pods together may grow, in bytes.
	floodRSSGrowth = 30 << 20
	// floodSettle bounds the wait for the operator's RSS to come back under the limit
	// once the flood is in place and the victim's cluster was healed and reconfigured:
	// memory a Go process freed goes back to the system in the background.
	floodSettle = 2 * time.Minute
)

func TestTenantFloodCostsBoundedMemory(t *testing.T) {
	f := framework.NewFeature(suite, "tenant flood costs bounded memory").
		Assess("another namespace's cluster heals and takes a config change under a flood of objects labelled as the operator's; no operator pod restarts, RSS grows by 30 MiB at most", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			victim := framework.Namespace(ctx)
			vc := framework.NewValkeyCluster(victim, "vk", 3, 1)
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 4*time.Minute)

			token := readerToken(ctx, t, k, victim, "scraper", true)
			var before map[string]float64
			// The binding may take a moment to reach the components' authorizers.
			if err := framework.Until(ctx, time.Minute, "the metrics of every operator pod", func(ctx context.Context) (bool, string, error) {
				var err error
				before, err = operatorRSS(ctx, k, token)
				return err == nil, "", err
			}); err != nil {
				t.Fatal(err)
			}
			runs := operatorRuns(ctx, t, k)
			watch := startRSSWatch(t, k, token)

			tenant := createTenant(ctx, t, k, victim+"-tenant")
			flood(ctx, t, k, tenant)

			healPrimary(ctx, t, k, vc)
			k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) {
				s.Config = v1alpha1.Config{"maxmemory-policy": "allkeys-lru"}
			})
			k.WaitClusterReady(ctx, t, vc, 2*time.Minute)
			for _, addr := range k.MemberAddrs(ctx, t, vc) {
				got, err := k.Admin(ctx, t, vc, addr).ConfigGet(ctx, "maxmemory-policy")
				if err != nil {
					t.Fatal(err)
				}
				if got["maxmemory-policy"] != "allkeys-lru" {
					t.Errorf("%s: maxmemory-policy %q, want allkeys-lru", addr, got["maxmemory-policy"])
				}
			}

			after := watch.settle(ctx, t, before)
			for _, problem := range runs.changes(operatorRuns(ctx, t, k)) {
				t.Errorf("operator pod %s", problem)
			}
			reportRSS(t, before, after, watch.peaks())

			deleteTenant(ctx, t, k, tenant)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// operatorSelector selects the pods of every component the chart runs, whichever way it
// splits the controllers (a Deployment each, or one manager): the component label is
// the chart's, its values are not assumed.
func operatorSelector() labels.Selector {
	sel := labels.SelectorFromSet(labels.Set{
		"app.kubernetes.io/name":     "valkey-operator",
		"app.kubernetes.io/instance": framework.OperatorRelease,
	})
	component, err := labels.NewRequirement("app.kubernetes.io/component", selection.Exists, nil)
	if err != nil {
		panic(err) // a constant key
	}
	return sel.Add(*component)
}

// operatorPods lists the operator's pods (every component's, running or not).
func operatorPods(ctx context.Context, k *framework.Cluster) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := k.Client.List(ctx, &pods, client.InNamespace(framework.OperatorNamespace),
		client.MatchingLabelsSelector{Selector: operatorSelector()}); err != nil {
		return nil, fmt.Errorf("list the operator's pods: %w", err)
	}
	return pods.Items, nil
}

// operatorRSS reads process_resident_memory_bytes of every running operator pod, summed
// per component.
func operatorRSS(ctx context.Context, k *framework.Cluster, token string) (map[string]float64, error) {
	pods, err := operatorPods(ctx, k)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		code, page, err := getMetrics(ctx, p.Status.PodIP, token)
		if err != nil {
			return nil, fmt.Errorf("metrics of %s: %w", p.Name, err)
		}
		if code != http.StatusOK {
			return nil, fmt.Errorf("metrics of %s: HTTP %d", p.Name, code)
		}
		v, err := metricValue(page, "process_resident_memory_bytes")
		if err != nil {
			return nil, fmt.Errorf("metrics of %s: %w", p.Name, err)
		}
		out[p.Labels["app.kubernetes.io/component"]] += v
	}
	if len(out) == 0 {
		return nil, errors.New("no running operator pod")
	}
	return out, nil
}

func total(rss map[string]float64) float64 {
	var s float64
	for _, v := range rss {
		s += v
	}
	return s
}

// rssWatch reads the operator's RSS every few seconds while the flood is in place:
// the latest reading, and each component's highest.
type rssWatch struct {
	sampler *framework.Sampler
	mu      sync.Mutex
	latest  map[string]float64
	at      time.Time
	peak    map[string]float64
}

func startRSSWatch(t *testing.T, k *framework.Cluster, token string) *rssWatch {
	w := &rssWatch{peak: map[string]float64{}}
	w.sampler = framework.StartSampler("operator RSS", 5*time.Second, func(ctx context.Context) error {
		r, err := operatorRSS(ctx, k, token)
		if err != nil {
			return err
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.latest, w.at = r, time.Now()
		for c, v := range r {
			w.peak[c] = max(w.peak[c], v)
		}
		return nil
	})
	t.Cleanup(func() { w.sampler.Stop() }) // when the test ends before settle
	return w
}

// settle waits until a reading taken from now on is within floodRSSGrowth of before,
// stops the watch and returns that reading (the last one when time ran out, which fails
// the test).
func (w *rssWatch) settle(ctx context.Context, t *testing.T, before map[string]float64) map[string]float64 {
	t.Helper()
	from := time.Now()
	var after map[string]float64
	err := framework.Until(ctx, floodSettle, "the operator's RSS within 30 MiB of before the flood", func(context.Context) (bool, string, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.latest == nil || w.at.Before(from) {
			return false, "no reading yet", nil
		}
		after = w.latest
		growth := total(after) - total(before)
		return growth <= floodRSSGrowth, fmt.Sprintf("%+.1f MiB", growth/(1<<20)), nil
	})
	t.Logf("%s", w.sampler.Stop())
	if after == nil {
		t.Fatalf("no reading of the operator's RSS after the flood: %v", err)
	}
	if err != nil {
		t.Errorf("the operator's pods together grew by %.1f MiB under the tenant's flood (limit %d MiB): %v",
			(total(after)-total(before))/(1<<20), floodRSSGrowth>>20, err)
	}
	return after
}

func (w *rssWatch) peaks() map[string]float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak
}

// reportRSS logs the figures per component and in all, in MiB.
func reportRSS(t *testing.T, before, after, peak map[string]float64) {
	t.Helper()
	names := map[string]bool{}
	for c := range before {
		names[c] = true
	}
	for c := range after {
		names[c] = true
	}
	sorted := make([]string, 0, len(names))
	for c := range names {
		sorted = append(sorted, c)
	}
	sort.Strings(sorted)
	const mib = 1 << 20
	for _, c := range sorted {
		t.Logf("%s: RSS %.1f MiB before, %.1f MiB after (%+.1f), %.1f MiB at most during the flood",
			c, before[c]/mib, after[c]/mib, (after[c]-before[c])/mib, peak[c]/mib)
	}
	t.Logf("operator in all: RSS %.1f MiB before, %.1f MiB after (%+.1f MiB, limit +%d)",
		total(before)/mib, total(after)/mib, (total(after)-total(before))/mib, floodRSSGrowth>>20)
}

// podRun is one operator pod as the kubelet reports it: its component, each
// container's restart count, and the containers whose last run was OOMKilled.
type podRun struct {
	name, component string
	restarts        map[string]int32
	oomKilled       []string
}

// podRuns are the operator's pods by UID.
type podRuns map[types.UID]podRun

func operatorRuns(ctx context.Context, t *testing.T, k *framework.Cluster) podRuns {
	t.Helper()
	pods, err := operatorPods(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	out := podRuns{}
	for _, p := range pods {
		r := podRun{name: p.Name, component: p.Labels["app.kubernetes.io/component"], restarts: map[string]int32{}}
		for _, cs := range p.Status.ContainerStatuses {
			r.restarts[cs.Name] = cs.RestartCount
			if term := cs.LastTerminationState.Terminated; term != nil && term.Reason == "OOMKilled" {
				r.oomKilled = append(r.oomKilled, cs.Name)
			}
		}
		out[p.UID] = r
	}
	return out
}

// changes says how the pods of now differ from those of runs: a pod gone or new, a
// container restarted, a container whose last run was OOMKilled.
func (runs podRuns) changes(now podRuns) []string {
	var out []string
	for uid, r := range runs {
		n, ok := now[uid]
		if !ok {
			out = append(out, fmt.Sprintf("%s (%s) is gone", r.name, r.component))
			continue
		}
		for c, before := range r.restarts {
			if after := n.restarts[c]; after != before {
				out = append(out, fmt.Sprintf("%s (%s): container %s restarted %d times", r.name, r.component, c, after-before))
			}
		}
	}
	for uid, n := range now {
		if _, ok := runs[uid]; !ok {
			out = append(out, fmt.Sprintf("%s (%s) is new: it replaced one", n.name, n.component))
		}
		for _, c := range n.oomKilled {
			out = append(out, fmt.Sprintf("%s (%s): container %s was OOMKilled", n.name, n.component, c))
		}
	}
	sort.Strings(out)
	return out
}

// createTenant creates the tenant's namespace, labelled as the suite's so the suite's end
// waits for it too; it is deleted when the test ends, whatever happened.
func createTenant(ctx context.Context, t *testing.T, k *framework.Cluster, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		framework.NamespaceSuiteLabel: framework.Slug(suite, 63),
	}}}
	if err := k.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.IgnoreNotFound(k.Client.Delete(context.Background(), ns))
	})
	// Pods are refused until the namespace's default ServiceAccount exists.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "default"}}
	if err := framework.WaitFor(ctx, k.Client, sa, time.Minute, "exist",
		func(*corev1.ServiceAccount) (bool, string) { return true, "" }); err != nil {
		t.Fatal(err)
	}
	return name
}

// deleteTenant deletes the tenant's namespace and waits until it is gone.
func deleteTenant(ctx context.Context, t *testing.T, k *framework.Cluster, name string) {
	t.Helper()
	start := time.Now()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k.Client.Delete(ctx, ns); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	if err := framework.WaitForDeletion(ctx, k.Client, ns, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("namespace %s gone %s after its deletion", name, time.Since(start).Round(100*time.Millisecond))
}

// flood creates the tenant's objects in ns, floodWorkers at a time, each labelled as the
// operator labels the objects of a cluster named x.
func flood(ctx context.Context, t *testing.T, k *framework.Cluster, ns string) {
	t.Helper()
	img, err := k.ComponentImage(images.ComponentToolbox)
	if err != nil {
		t.Fatal(err)
	}
	// The framework's clients keep to 50 requests/s and speak JSON, in which a Secret's
	// bytes grow by a third.
	rc := rest.CopyConfig(k.REST)
	rc.QPS, rc.Burst = 100, 100
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	blob := make([]byte, floodBlob)
	if _, err := rand.Read(blob); err != nil {
		t.Fatal(err)
	}
	creates := floodObjects(cs, ns, img.Ref, blob)
	start := time.Now()
	if err := createAll(ctx, creates, floodWorkers); err != nil {
		t.Fatal(err)
	}
	size := (floodSecrets+floodConfigMaps)*floodBlob + (floodPods+3*floodEach)*floodAnnotation
	t.Logf("tenant %s: %d Secrets and %d ConfigMaps of %d KiB, %d Pods, %d Services, NetworkPolicies and PodDisruptionBudgets each with a %d KiB annotation (%d MiB in all), created in %s",
		ns, floodSecrets, floodConfigMaps, floodBlob>>10, floodPods, floodEach, floodAnnotation>>10, size>>20, time.Since(start).Round(time.Second))
}

// floodObjects returns one create call per object of the flood.
func floodObjects(cs kubernetes.Interface, ns, image string, blob []byte) []func(context.Context) error {
	note := strings.Repeat("x", floodAnnotation)
	meta := func(kind string, i int, annotated bool) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("flood-%s-%03d", kind, i), Labels: v1alpha1.ClusterLabels("x")}
		if annotated {
			m.Annotations = map[string]string{"tenant.example.com/note": note}
		}
		return m
	}
	selector := &metav1.LabelSelector{MatchLabels: v1alpha1.ClusterLabels("x")}
	var out []func(context.Context) error
	for i := range floodSecrets {
		s := &corev1.Secret{ObjectMeta: meta("secret", i, false), Data: map[string][]byte{"blob": blob}}
		out = append(out, func(ctx context.Context) error {
			_, err := cs.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
			return err
		})
	}
	for i := range floodConfigMaps {
		c := &corev1.ConfigMap{ObjectMeta: meta("configmap", i, false), BinaryData: map[string][]byte{"blob": blob}}
		out = append(out, func(ctx context.Context) error {
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, c, metav1.CreateOptions{})
			return err
		})
	}
	for i := range floodPods {
		// Pending for good: no node has the label.
		p := &corev1.Pod{ObjectMeta: meta("pod", i, true), Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"valkey.io/e2e": "nowhere"},
			Containers:   []corev1.Container{{Name: "app", Image: image}},
		}}
		out = append(out, func(ctx context.Context) error {
			_, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
			return err
		})
	}
	for i := range floodEach {
		svc := &corev1.Service{ObjectMeta: meta("service", i, true), Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Name: "client", Port: 6379, TargetPort: intstr.FromInt32(6379)}},
		}}
		np := &networkingv1.NetworkPolicy{ObjectMeta: meta("networkpolicy", i, true), Spec: networkingv1.NetworkPolicySpec{
			PodSelector: *selector, PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		}}
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: meta("pdb", i, true), Spec: policyv1.PodDisruptionBudgetSpec{
			Selector: selector, MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		}}
		out = append(out,
			func(ctx context.Context) error {
				_, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
				return err
			},
			func(ctx context.Context) error {
				_, err := cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, np, metav1.CreateOptions{})
				return err
			},
			func(ctx context.Context) error {
				_, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{})
				return err
			})
	}
	return out
}

// createBackoff retries a create the API server refused for being busy.
var createBackoff = wait.Backoff{Steps: 6, Duration: time.Second, Factor: 2, Jitter: 0.2}

func retriable(err error) bool {
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}

// createAll runs the creates on n workers; an object that already exists counts as
// created. It returns how many failed and the first error.
func createAll(ctx context.Context, creates []func(context.Context) error, n int) error {
	var wg sync.WaitGroup
	var failed atomic.Int32
	var first error
	var once sync.Once
	next := make(chan func(context.Context) error)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for create := range next {
				err := retry.OnError(createBackoff, retriable, func() error { return create(ctx) })
				if err != nil && !apierrors.IsAlreadyExists(err) {
					failed.Add(1)
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for _, c := range creates {
		next <- c
	}
	close(next)
	wg.Wait()
	if f := failed.Load(); f > 0 {
		return fmt.Errorf("create the tenant's objects: %d of %d failed, the first: %w", f, len(creates), first)
	}
	return nil
}

// healPrimary kills the primary of shard 0 as the heal suite does (its server SIGKILLed,
// its pod deleted with no grace) and waits for its replica to serve the shard, the
// cluster to be Ready again and the dead node to be forgotten.
func healPrimary(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) {
	t.Helper()
	p := k.Member(ctx, t, vc, 0, v1alpha1.RolePrimary)
	r := k.Member(ctx, t, vc, 0, v1alpha1.RoleReplica)
	start := time.Now()
	if err := framework.KillPod(ctx, k.Client, k.PodOf(ctx, t, vc, p.Name)); err != nil {
		t.Fatal(err)
	}
	owner := k.WaitOwnerChange(ctx, t, vc, 0, p.Status.NodeID, 2*time.Minute)
	t.Logf("shard 0 served by %.8s %s after its primary was killed", owner, time.Since(start).Round(10*time.Millisecond))
	if owner != r.Status.NodeID {
		t.Errorf("shard 0 is served by %.8s, want its replica %s (%.8s)", owner, r.Name, r.Status.NodeID)
	}
	k.WaitNotReadyThenReady(ctx, t, vc, start, 3*time.Minute)
	t.Logf("full redundancy back %s after the kill", time.Since(start).Round(10*time.Millisecond))
	k.ForgottenEverywhere(ctx, t, vc, p.Status.NodeID)
}
