package framework

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
)

// Labels of the namespaces made for features.
const (
	NamespaceSuiteLabel   = "e2e.valkey.io/suite"
	NamespaceFeatureLabel = "e2e.valkey.io/feature"
	NamespaceKeptLabel    = "e2e.valkey.io/kept"
)

// FeatureOption changes what NewFeature sets up.
type FeatureOption func(*featureOptions)

type featureOptions struct{ namespace bool }

// WithoutNamespace makes a feature that needs no namespace of its own (one that only
// reads cluster-scoped state), and so runs without a cluster in unit tests.
func WithoutNamespace() FeatureOption { return func(o *featureOptions) { o.namespace = false } }

// NewFeature starts a feature of a suite: labelled suite=<suite>, with a first setup
// step that creates a namespace of its own (read it with Namespace(ctx)). When the
// feature ends, the namespace is deleted (without waiting: the suite's Finish waits for
// all of them); when it failed, the namespace's pods and events are logged first, and
// the namespace is kept if E2E_KEEP_NAMESPACES is set.
func NewFeature(suite, name string, opts ...FeatureOption) *features.FeatureBuilder {
	o := featureOptions{namespace: true}
	for _, opt := range opts {
		opt(&o)
	}
	b := features.New(name).WithLabel(LabelSuite, suite)
	return b.WithSetup("prepare", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
		k := clusterFrom(ctx)
		t.Cleanup(func() {
			if t.Failed() && k != nil {
				k.markFailed()
			}
		})
		if !o.namespace {
			return ctx
		}
		if k == nil {
			t.Fatal("no cluster in the context: build the environment with framework.NewEnv")
		}
		ns, err := k.createFeatureNamespace(ctx, suite, name)
		if err != nil {
			t.Fatalf("create the feature's namespace: %v", err)
		}
		t.Logf("namespace %s", ns)
		t.Cleanup(func() { k.cleanupNamespace(t, ns) })
		return context.WithValue(ctx, namespaceKey{}, ns)
	})
}

type namespaceKey struct{}

// Namespace returns the namespace NewFeature made for the running feature ("" if none).
func Namespace(ctx context.Context) string {
	ns, _ := ctx.Value(namespaceKey{}).(string)
	return ns
}

var notDNS = regexp.MustCompile(`[^a-z0-9]+`)

// Slug turns a feature name into a DNS label of at most n characters.
func Slug(name string, n int) string {
	s := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(s) > n {
		s = strings.TrimRight(s[:n], "-")
	}
	return s
}

// RandomSuffix returns n random lowercase hex characters.
func RandomSuffix(n int) string {
	b := make([]byte, (n+1)/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

// featureNamespaceName is <suite>-<feature slug>-<random>, at most 63 characters.
func featureNamespaceName(suite, feature string) string {
	prefix := Slug(suite, 20) + "-" + Slug(feature, 35)
	return strings.Trim(prefix, "-") + "-" + RandomSuffix(5)
}

func (k *Cluster) createFeatureNamespace(ctx context.Context, suite, feature string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   featureNamespaceName(suite, feature),
		Labels: map[string]string{NamespaceSuiteLabel: Slug(suite, 63), NamespaceFeatureLabel: Slug(feature, 63)},
	}}
	if err := k.Client.Create(ctx, ns); err != nil {
		return "", err
	}
	return ns.Name, nil
}

// cleanupNamespace logs what a failed feature left, then deletes (or keeps) its namespace.
func (k *Cluster) cleanupNamespace(t *testing.T, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if t.Failed() {
		k.LogNamespace(ctx, t, ns)
		if os.Getenv("E2E_KEEP_NAMESPACES") != "" {
			patch := client.RawPatch("application/merge-patch+json", []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, NamespaceKeptLabel)))
			if err := k.Client.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, patch); err != nil {
				t.Logf("label namespace %s as kept: %v", ns, err)
			}
			t.Logf("keeping namespace %s (E2E_KEEP_NAMESPACES)", ns)
			return
		}
	}
	bg := metav1.DeletePropagationBackground
	err := k.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, &client.DeleteOptions{PropagationPolicy: &bg})
	if client.IgnoreNotFound(err) != nil {
		t.Errorf("delete namespace %s: %v", ns, err)
	}
}

// DumpMarker starts the lines LogNamespace logs: hack/e2e.sh finds a failed feature's
// last lines before it (where the failure was said) and repeats them after the suite,
// as the dump pushes them out of sight.
const DumpMarker = "pods and events of the failed feature's namespace"

// LogNamespace logs the pods and the latest events of a namespace (for failures).
func (k *Cluster) LogNamespace(ctx context.Context, t testing.TB, ns string) {
	t.Helper()
	t.Logf("%s %s:", DumpMarker, ns)
	var pods corev1.PodList
	if err := k.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Logf("list pods of %s: %v", ns, err)
	} else {
		dir := filepath.Join(k.artifactsDir(), ns)
		for i := range pods.Items {
			t.Logf("pod %s", DescribePod(&pods.Items[i]))
			k.logRestartedContainers(ctx, t, &pods.Items[i])
			k.saveContainerLogs(ctx, t, &pods.Items[i], dir)
		}
		k.saveOperatorState(ctx, t, ns, dir)
		t.Logf("the logs of every container of %s, the operator's logs and the namespace's valkey.io objects are in %s", ns, dir)
	}
	var events corev1.EventList
	if err := k.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Logf("list events of %s: %v", ns, err)
		return
	}
	items := events.Items
	sort.Slice(items, func(i, j int) bool { return eventTime(items[i]).Before(eventTime(items[j])) })
	if len(items) > 40 {
		items = items[len(items)-40:]
	}
	for _, e := range items {
		t.Logf("event %s %s %s/%s %s: %s", eventTime(e).Format("15:04:05.000"), e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
	}
}

// saveOperatorState writes, next to a failed feature's pod logs, every operator
// container's log (operator_<pod>_<container>.log) and the namespace's valkey.io objects
// with their status (valkey-objects.yaml): a judgement the operator made, such as a
// member not in sync for a moment, is explained only by the controller's own words and
// the members' conditions, gone once the namespace is.
func (k *Cluster) saveOperatorState(ctx context.Context, t testing.TB, ns, dir string) {
	logs, err := k.OperatorLogs(ctx)
	if err != nil {
		t.Logf("keep the operator's logs: %v", err)
	}
	for name, log := range logs {
		file := "operator_" + strings.ReplaceAll(name, "/", "_") + ".log"
		if err := os.WriteFile(filepath.Join(dir, file), []byte(log), 0o644); err != nil {
			t.Logf("keep the operator's logs: %v", err)
		}
	}
	out, err := k.Kubectl(ctx, "-n", ns, "get", "valkeyclusters,valkeynodes,valkeybackups,valkeybackupschedules", "-o", "yaml")
	if err != nil {
		out += "\n(kubectl get: " + err.Error() + ")\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "valkey-objects.yaml"), []byte(out), 0o644); err != nil {
		t.Logf("keep the valkey.io objects of %s: %v", ns, err)
	}
}

// logRestartedContainers logs the end of the previous run of every container of p that
// restarted: the evidence of a crash loop is gone once the namespace is.
func (k *Cluster) logRestartedContainers(ctx context.Context, t testing.TB, p *corev1.Pod) {
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if cs.RestartCount == 0 {
			continue
		}
		out, err := k.Kubectl(ctx, "-n", p.Namespace, "logs", p.Name, "-c", cs.Name, "--previous", "--tail=25")
		if err != nil {
			t.Logf("previous logs of %s/%s: %v", p.Name, cs.Name, err)
			continue
		}
		t.Logf("previous run of %s/%s (%d restarts):\n%s", p.Name, cs.Name, cs.RestartCount, out)
	}
}

// saveContainerLogs writes the whole log of each container of p, and of its previous
// run when it restarted, to dir (one file per container and run): the servers' own
// words on a failure (elections, votes refused, syncs) are gone with the namespace.
func (k *Cluster) saveContainerLogs(ctx context.Context, t testing.TB, p *corev1.Pod, dir string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("keep the logs of %s: %v", p.Name, err)
		return
	}
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		runs := []string{""}
		if cs.RestartCount > 0 {
			runs = append(runs, "--previous")
		}
		for _, run := range runs {
			args := []string{"-n", p.Namespace, "logs", p.Name, "-c", cs.Name, "--timestamps"}
			name := p.Name + "_" + cs.Name + ".log"
			if run != "" {
				args, name = append(args, run), p.Name+"_"+cs.Name+".previous.log"
			}
			out, err := k.Kubectl(ctx, args...)
			if err != nil {
				out += "\n(kubectl logs: " + err.Error() + ")\n"
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(out), 0o644); err != nil {
				t.Logf("keep the logs of %s/%s: %v", p.Name, cs.Name, err)
			}
		}
	}
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
