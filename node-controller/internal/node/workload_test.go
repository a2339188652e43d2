package node

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func TestDecide(t *testing.T) {
	ann := workloadAnnotations(3, "h1")
	cases := []struct {
		name string
		spec int64
		hash string
		want gateAction
	}{
		{"same revision, same template", 3, "h1", keepWorkload},
		{"same revision, new template (held back)", 3, "h2", keepWorkload},
		{"new revision, same template", 4, "h1", recordRevision},
		{"new revision, new template", 4, "h2", replacePod},
		{"lower revision counts as new", 2, "h2", replacePod},
	}
	for _, tc := range cases {
		if got := decide(tc.spec, ann, tc.hash); got != tc.want {
			t.Errorf("%s: decide = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := decide(1, nil, "h"); got != replacePod {
		t.Errorf("a workload without annotations (not ours) is rebuilt only under a new revision: %v", got)
	}
}

// TestRestartBuildsANewPod: a restart the cluster-controller authorises (a new
// spec.restartedAt with a raised revision, as for a member whose server refuses the
// operator's login) changes the pod template, so the workload's pod is replaced, not
// only relabelled with the new revision.
func TestRestartBuildsANewPod(t *testing.T) {
	vn := testNode()
	running := workloadAnnotations(vn.Spec.Revision, mustTemplate(t, vn).Annotations[AnnotationTemplateHash])
	restarted := testNode(func(vn *v1alpha1.ValkeyNode) {
		vn.Spec.Revision++
		vn.Spec.RestartedAt = "2026-12-05T19:00:00Z"
	})
	tmpl := mustTemplate(t, restarted)
	if got := decide(restarted.Spec.Revision, running, tmpl.Annotations[AnnotationTemplateHash]); got != replacePod {
		t.Fatalf("decide = %v, want replacePod", got)
	}
	if tmpl.Annotations[v1alpha1.AnnotationRestartedAt] != "2026-12-05T19:00:00Z" {
		t.Errorf("the pod's annotations do not carry the restart: %v", tmpl.Annotations)
	}
}

// TestOperatorUpgradeDoesNotRoll pins the rule that a different rendering (here a
// different template hash for the same spec, as an operator upgrade would produce) is
// held back until the revision is raised, and reported.
func TestOperatorUpgradeDoesNotRoll(t *testing.T) {
	vn := testNode()
	tmpl := mustTemplate(t, vn)
	oldAnn := workloadAnnotations(vn.Spec.Revision, "rendered-by-an-older-operator")
	if got := decide(vn.Spec.Revision, oldAnn, tmpl.Annotations[AnnotationTemplateHash]); got != keepWorkload {
		t.Fatalf("decide = %v, want keepWorkload", got)
	}
	s := &scope{node: vn, desiredConfig: normaliseConfig(vn.Spec.Config), applied: normaliseConfig(vn.Spec.Config),
		workloadAnn: oldAnn, desiredHash: tmpl.Annotations[AnnotationTemplateHash]}
	msg := pendingMessage(s)
	if !strings.Contains(msg, "the pod template") || !strings.Contains(msg, "raise spec.revision") {
		t.Errorf("pending message = %q", msg)
	}
}

func TestPendingMessageNamesConfigKeys(t *testing.T) {
	vn := testNode(withConfig("maxmemory", "100mb", "appendonly", "yes"))
	applied := map[string]string{"maxmemory": "100mb", "appendonly": "no"}
	running := testNode(withConfig("maxmemory", "100mb", "appendonly", "no"))
	s := &scope{node: vn, desiredConfig: normaliseConfig(vn.Spec.Config), applied: applied,
		workloadAnn: workloadAnnotations(1, mustTemplate(t, running).Annotations[AnnotationTemplateHash]),
		desiredHash: mustTemplate(t, vn).Annotations[AnnotationTemplateHash]}
	msg := pendingMessage(s)
	if !strings.Contains(msg, "config appendonly") || strings.Contains(msg, "pod template") {
		t.Errorf("pending message = %q, want only the config key", msg)
	}
	s.workloadAnn = workloadAnnotations(1, s.desiredHash)
	if msg := pendingMessage(s); msg != "" {
		t.Errorf("nothing pending, message = %q", msg)
	}
}

func TestBuildStatefulSet(t *testing.T) {
	vn := testNode()
	tmpl := mustTemplate(t, vn)
	sts := buildStatefulSet(vn, tmpl)
	if sts.Name != vn.Name || *sts.Spec.Replicas != 1 || sts.Spec.ServiceName != "demo-nodes" ||
		sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement || len(sts.Spec.VolumeClaimTemplates) != 0 {
		t.Errorf("StatefulSet = %+v", sts.Spec)
	}
	if sts.Annotations[AnnotationRevision] != "1" || sts.Annotations[AnnotationTemplateHash] != tmpl.Annotations[AnnotationTemplateHash] {
		t.Errorf("annotations = %v", sts.Annotations)
	}
	if !selects(sts.Spec.Selector, tmpl.Labels) {
		t.Error("the selector does not select the template")
	}
}

func TestBuildDeployment(t *testing.T) {
	vn := testNode(withWorkload(v1alpha1.WorkloadDeployment))
	tmpl := mustTemplate(t, vn)
	d := buildDeployment(vn, tmpl)
	if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || !selects(d.Spec.Selector, tmpl.Labels) {
		t.Errorf("Deployment = %+v", d.Spec)
	}
}

func TestBuildPod(t *testing.T) {
	vn := testNode(withWorkload(v1alpha1.WorkloadPod))
	tmpl := mustTemplate(t, vn)
	p := buildPod(vn, tmpl)
	if p.Name != vn.Name || p.Namespace != vn.Namespace || p.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("pod = %s/%s %s", p.Namespace, p.Name, p.Spec.RestartPolicy)
	}
	if p.Annotations[AnnotationRevision] != "1" || p.Annotations[AnnotationTemplateHash] == "" {
		t.Errorf("annotations = %v", p.Annotations)
	}
	if _, ok := tmpl.Annotations[AnnotationRevision]; ok {
		t.Error("buildPod changed the template")
	}
}

func selects(sel *metav1.LabelSelector, labels map[string]string) bool {
	for k, v := range sel.MatchLabels {
		if labels[k] != v {
			return false
		}
	}
	return len(sel.MatchLabels) > 0
}

func TestChoosePod(t *testing.T) {
	now := time.Now()
	pod := func(name string, age time.Duration, deleting bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{Time: now}
		}
		return p
	}
	dep := testNode(withWorkload(v1alpha1.WorkloadDeployment))
	pods := []corev1.Pod{pod("old", time.Hour, false), pod("newest-deleting", 0, true), pod("new", time.Minute, false)}
	if got := choosePod(dep, pods); got == nil || got.Name != "new" {
		t.Errorf("choosePod = %v, want the newest pod not being deleted", got)
	}
	if got := choosePod(dep, nil); got != nil {
		t.Errorf("choosePod(nil) = %v", got)
	}
	bare := testNode(withWorkload(v1alpha1.WorkloadPod))
	if got := choosePod(bare, pods); got != nil {
		t.Errorf("a bare pod must be named like the node, got %v", got.Name)
	}
	if got := choosePod(bare, append(pods, pod(bare.Name, time.Hour, false))); got == nil || got.Name != bare.Name {
		t.Errorf("choosePod = %v, want %s", got, bare.Name)
	}
}
