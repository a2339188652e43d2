//go:build e2e

package operate

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/e2e/health"
)

// appPassword is the password of the user the cli feature logs in as.
const appPassword = "operate-e2e-Pa55word"

// run runs the plugin against the suite's cluster and returns its output.
func run(ctx context.Context, t *testing.T, k *framework.Cluster, args ...string) (string, error) {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	// The command first, then the connection flags: everything after "--" is valkey-cli's.
	full := append([]string{args[0], "--kubeconfig", k.Kubeconfig, "-n", framework.Namespace(ctx)}, args[1:]...)
	cmd := exec.CommandContext(cctx, plugin, full...)
	out, err := cmd.CombinedOutput()
	t.Logf("kubectl valkey %s:\n%s", strings.Join(args, " "), out)
	return string(out), err
}

// setup creates a 2x1 cluster with a user whose password is in a Secret. Its primaries
// stay where the plugin's failovers put them (primaryPlacement policy None): failback
// would undo a failover that leaves two primaries on one node, and the suite counts the
// failovers of each action.
func setup(ctx context.Context, t *testing.T) (*framework.Cluster, *v1alpha1.ValkeyCluster) {
	t.Helper()
	k := framework.ClusterFrom(ctx, t)
	ns := framework.Namespace(ctx)
	if err := k.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-pw"},
		StringData: map[string]string{"pw": appPassword}}); err != nil {
		t.Fatal(err)
	}
	vc := framework.NewValkeyCluster(ns, "vk", 2, 1)
	vc.Spec.PrimaryPlacement = &v1alpha1.PrimaryPlacementSpec{Policy: v1alpha1.PrimaryPlacementNone}
	vc.Spec.Users = append(vc.Spec.Users, v1alpha1.UserSpec{Name: "app", Permissions: "+@all ~*",
		PasswordSecret: &v1alpha1.PasswordSecretRef{Name: "app-pw", Keys: []string{"pw"}}})
	if err := k.Client.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
	return k, vc
}

func memberNames(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, shard int32) []string {
	var out []string
	for _, m := range k.Members(ctx, t, vc) {
		if shard < 0 || m.Spec.ShardIndex == shard {
			out = append(out, m.Name)
		}
	}
	slices.Sort(out)
	return out
}

// annotationOwners are the field managers that wrote an annotation of obj.
func annotationOwners(obj metav1.Object, key string) []string {
	var out []string
	for _, mf := range obj.GetManagedFields() {
		if mf.FieldsV1 != nil && strings.Contains(mf.FieldsV1.GetRawString(), fmt.Sprintf(`"f:%s"`, key)) {
			out = append(out, mf.Manager+" ("+string(mf.Operation)+")")
		}
	}
	return out
}

func TestPlugin(t *testing.T) {
	var k *framework.Cluster
	var vc *v1alpha1.ValkeyCluster
	f := framework.NewFeature(suite, "kubectl valkey").
		Assess("status shows shards, members, slots, conditions and events", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k, vc = setup(ctx, t)
			out, err := run(ctx, t, k, "status", "vk", "--events", "50")
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"state Ready", "shards 2/2 ready", "0-8191", "8192-16383", "in sync", "Progressing", "MemberCreated"} {
				if !strings.Contains(out, want) {
					t.Errorf("status lacks %q", want)
				}
			}
			for _, sh := range vc.Status.Shards {
				if !strings.Contains(out, sh.Primary) {
					t.Errorf("status lacks primary %s", sh.Primary)
				}
			}
			return ctx
		}).
		Assess("failover: the replica of shard 1 takes over, one planned failover", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			old := k.Member(ctx, t, vc, 1, v1alpha1.RolePrimary).Name
			replica := k.Member(ctx, t, vc, 1, v1alpha1.RoleReplica).Name
			if _, err := run(ctx, t, k, "failover", "vk", "--shard", "1"); err != nil {
				t.Fatal(err)
			}
			if err := k.Client.Get(ctx, client.ObjectKeyFromObject(vc), vc); err != nil {
				t.Fatal(err)
			}
			if got := vc.Status.Shards[1].Primary; got != replica {
				t.Errorf("shard 1 primary %s, want %s (was %s)", got, replica, old)
			}
			// The request is answered in status; the annotation stays as the plugin set it,
			// so a GitOps diff of the cluster shows no change the operator made.
			value := vc.Annotations[v1alpha1.AnnotationFailover]
			if f := vc.Status.Failover; f == nil || f.Request != value || f.Phase != v1alpha1.FailoverRequestDone || f.Target != replica {
				t.Errorf("status.failover = %+v, want request %q Done with target %s", f, value, replica)
			}
			if owners := annotationOwners(vc, v1alpha1.AnnotationFailover); len(owners) != 1 {
				t.Errorf("the %s annotation is written by %v, want the plugin alone", v1alpha1.AnnotationFailover, owners)
			}
			if evs := k.Events(ctx, t, vc.Namespace, "FailoverCompleted"); len(evs) != 1 {
				t.Errorf("%d FailoverCompleted events, want 1:\n%s", len(evs), framework.DescribeEvents(evs))
			}
			if _, err := run(ctx, t, k, "failover", "vk", "--shard", "5"); err == nil {
				t.Error("a failover of a shard that does not exist succeeded")
			}
			return ctx
		}).
		Assess("cli: valkey-cli as a user, the password only from its Secret", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			if _, err := run(ctx, t, k, "cli", "vk", "--user", "app", "--", "SET", "greeting", "hello"); err != nil {
				t.Fatal(err)
			}
			out, err := run(ctx, t, k, "cli", "vk", "--user", "app", "--", "GET", "greeting")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "hello") {
				t.Errorf("GET greeting printed %q, want hello", out)
			}
			if strings.Contains(out, appPassword) {
				t.Error("the password is in the plugin's output")
			}
			pods := &corev1.PodList{}
			if err := k.Client.List(ctx, pods, client.InNamespace(vc.Namespace), client.MatchingLabels{"app.kubernetes.io/name": "valkey-cli"}); err != nil {
				t.Fatal(err)
			}
			for _, p := range pods.Items {
				if p.DeletionTimestamp.IsZero() {
					t.Errorf("cli pod %s left behind", p.Name)
				}
			}
			return ctx
		}).
		Assess("pause holds a roll; resume lets it go", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			if _, err := run(ctx, t, k, "pause", "vk"); err != nil {
				t.Fatal(err)
			}
			before := memberNames(ctx, t, k, vc, -1)
			k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) {
				s.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("40Mi")}
			})
			if err := framework.WaitFor(ctx, k.Client, vc, time.Minute, "Progressing Paused", framework.ConditionIs(v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonPaused)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Second) // nothing to wait for: the roll must not start
			if got := memberNames(ctx, t, k, vc, -1); !slices.Equal(got, before) {
				t.Errorf("members changed while paused: %v -> %v", before, got)
			}
			if vc.Status.ObservedGeneration >= vc.Generation {
				t.Errorf("observedGeneration %d while generation %d waits", vc.Status.ObservedGeneration, vc.Generation)
			}
			if _, err := run(ctx, t, k, "resume", "vk"); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 5*time.Minute)
			for _, m := range k.Members(ctx, t, vc) {
				if slices.Contains(before, m.Name) {
					t.Errorf("member %s was not rolled after the resume", m.Name)
				}
			}
			return ctx
		}).
		Assess("restart of one shard rolls only it, with one failover", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			shard0, shard1 := memberNames(ctx, t, k, vc, 0), memberNames(ctx, t, k, vc, 1)
			completed := len(k.Events(ctx, t, vc.Namespace, "FailoverCompleted"))
			out, err := run(ctx, t, k, "restart", "vk", "--shard", "0")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "restart of shard 0 done") {
				t.Errorf("restart did not say it is done")
			}
			for _, n := range memberNames(ctx, t, k, vc, 0) {
				if slices.Contains(shard0, n) {
					t.Errorf("member %s of shard 0 was not restarted", n)
				}
			}
			if got := memberNames(ctx, t, k, vc, 1); !slices.Equal(got, shard1) {
				t.Errorf("shard 1 changed: %v -> %v", shard1, got)
			}
			if got := len(k.Events(ctx, t, vc.Namespace, "FailoverCompleted")) - completed; got != 1 {
				t.Errorf("%d failovers during the restart of shard 0, want 1", got)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func TestWaitForAChange(t *testing.T) {
	f := framework.NewFeature(suite, "kubectl wait Progressing=False after an image change").
		Assess("returns only once the roll is done; kstatus and Argo CD read the roll", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k, vc := setup(ctx, t)
			img, err := k.ValkeyImage(9, 1)
			if err != nil {
				t.Fatal(err)
			}
			script, err := health.ArgoCDScript()
			if err != nil {
				t.Fatal(err)
			}
			k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) { s.Image = img.Ref })
			waited := make(chan error, 1)
			go func() {
				_, err := k.Kubectl(ctx, "wait", "-n", vc.Namespace, "valkeycluster/vk", "--for=condition=Progressing=False", "--timeout=10m")
				waited <- err
			}()
			seen := map[string]bool{}
			var werr error
		poll:
			for {
				select {
				case werr = <-waited:
					break poll
				case <-time.After(500 * time.Millisecond):
				}
				cur := &v1alpha1.ValkeyCluster{}
				if err := k.Client.Get(ctx, client.ObjectKeyFromObject(vc), cur); err != nil {
					continue
				}
				obj, _ := health.Object(cur)
				ks, _, _ := health.Kstatus(obj)
				hs, _, _ := health.ArgoCD(script, obj)
				seen["kstatus "+string(ks)], seen["argocd "+hs] = true, true
			}
			if werr != nil {
				t.Fatalf("kubectl wait: %v", werr)
			}
			// The moment kubectl wait returned: every member runs the new image.
			for _, m := range k.Members(ctx, t, vc) {
				if m.Spec.Image != img.Ref || m.Status.Revision != m.Spec.Revision ||
					(m.Status.Version != "" && !strings.HasPrefix(m.Status.Version, "9.1")) {
					t.Errorf("kubectl wait returned while %s runs %s (version %s, revision %d of %d)",
						m.Name, m.Spec.Image, m.Status.Version, m.Status.Revision, m.Spec.Revision)
				}
			}
			if err := k.Client.Get(ctx, client.ObjectKeyFromObject(vc), vc); err != nil {
				t.Fatal(err)
			}
			if ok, detail := framework.ClusterReady(vc); !ok {
				t.Errorf("kubectl wait returned before the cluster is Ready with its spec applied: %s", detail)
			}
			if r := meta.FindStatusCondition(vc.Status.Conditions, v1alpha1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue {
				t.Errorf("Ready is not True after the roll")
			}
			obj, _ := health.Object(vc)
			ks, _, _ := health.Kstatus(obj)
			hs, _, _ := health.ArgoCD(script, obj)
			t.Logf("during the roll: %v; after: kstatus %s, Argo CD %s", seen, ks, hs)
			if !seen["kstatus InProgress"] || !seen["argocd Progressing"] {
				t.Errorf("the roll was never read as in progress: %v", seen)
			}
			if ks != "Current" || hs != "Healthy" {
				t.Errorf("after the roll: kstatus %s, Argo CD %s; want Current, Healthy", ks, hs)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
