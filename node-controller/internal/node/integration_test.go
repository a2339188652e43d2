package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// contains returns a message check that wants every fragment.
func contains(fragments ...string) func(string) error {
	return func(msg string) error {
		for _, f := range fragments {
			if !strings.Contains(msg, f) {
				return fmt.Errorf("message %q lacks %q", msg, f)
			}
		}
		return nil
	}
}

// configGet reads one parameter from a test server.
func configGet(t *testing.T, srv *valkeytest.Server, key string) string {
	t.Helper()
	c := srv.Dial(t)
	m, err := c.ConfigGet(context.Background(), key)
	if err != nil {
		t.Fatalf("config get %s: %v", key, err)
	}
	return m[key]
}

// TestEnvStatefulSet follows a StatefulSet node through creation, a running pod, the
// revision gate, live config and a simulated operator upgrade.
func TestEnvStatefulSet(t *testing.T) {
	te := startEnv(t)
	ns := te.namespace(t)
	srv := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	const name, ip = "demo-sts01", "10.200.0.1"
	te.dialer.set(ip, srv.Dial(t))
	te.newNode(t, ns, name)

	vn := te.waitCondition(t, ns, name, v1alpha1.ConditionPodReady, metav1.ConditionFalse, v1alpha1.ReasonPodPending, nil)
	var cm corev1.ConfigMap
	te.waitObject(t, ns, name, &cm, func() error { return controlledBy(&cm, vn) })
	if want := string(renderConfig(vn, normaliseConfig(vn.Spec.Config))); cm.Data[ConfigKey] != want {
		t.Errorf("valkey.conf =\n%s\nwant\n%s", cm.Data[ConfigKey], want)
	}
	var sts appsv1.StatefulSet
	te.waitObject(t, ns, name, &sts, func() error { return controlledBy(&sts, vn) })
	tmpl := mustTemplate(t, vn)
	if sts.Annotations[AnnotationRevision] != "1" || sts.Annotations[AnnotationTemplateHash] != tmpl.Annotations[AnnotationTemplateHash] ||
		sts.Spec.Template.Annotations[AnnotationTemplateHash] != tmpl.Annotations[AnnotationTemplateHash] {
		t.Errorf("StatefulSet annotations %v, template annotations %v", sts.Annotations, sts.Spec.Template.Annotations)
	}
	if sts.Spec.ServiceName != "demo-nodes" || *sts.Spec.Replicas != 1 || sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("StatefulSet spec = %+v", sts.Spec)
	}
	te.waitCondition(t, ns, name, v1alpha1.ConditionStorageReady, metav1.ConditionTrue, v1alpha1.ReasonStorageNotUsed, nil)
	te.waitCondition(t, ns, name, v1alpha1.ConditionConfigApplied, metav1.ConditionTrue, v1alpha1.ReasonConfigApplied, nil)
	te.waitCondition(t, ns, name, v1alpha1.ConditionInvalidSpec, metav1.ConditionFalse, v1alpha1.ReasonValid, nil)
	te.waitEvent(t, ns, name, "Created")

	pod := te.startPod(t, ns, name+"-0", sts.Spec.Template, ip)
	vn = te.waitCondition(t, ns, name, v1alpha1.ConditionPodReady, metav1.ConditionTrue, v1alpha1.ReasonPodRunning, contains("as primary"))
	if st := vn.Status; st.PodName != pod.Name || st.PodIP != ip || st.Role != v1alpha1.RolePrimary || st.Version != srv.Version.String() || st.Revision != 1 {
		t.Errorf("status = %+v", st)
	}
	eventually(t, "role labels", func() error {
		var p corev1.Pod
		var s appsv1.StatefulSet
		te.get(t, ns, pod.Name, &p)
		te.get(t, ns, name, &s)
		if p.Labels[v1alpha1.LabelRole] != "primary" || s.Labels[v1alpha1.LabelRole] != "primary" {
			return fmt.Errorf("pod labels %v, StatefulSet labels %v", p.Labels, s.Labels)
		}
		if s.Spec.Template.Labels[v1alpha1.LabelRole] != "" {
			return errors.New("the role label reached the template")
		}
		return nil
	})

	t.Run("steady state writes nothing", func(t *testing.T) { steadyStateWritesNothing(t, te, ns, name, pod.Name) })
	t.Run("live config is applied without a new pod", func(t *testing.T) { liveConfig(t, te, srv, ns, name, pod.Name) })
	t.Run("the gate holds a non-live change until the revision", func(t *testing.T) { revisionGate(t, te, ns, name, ip) })
	t.Run("a new rendering does not roll by itself", func(t *testing.T) { operatorUpgrade(t, te, ns, name) })
	t.Run("a pending certificate nudges the kubelet", func(t *testing.T) { mountRefresh(t, te, ns, name, pod.Name) })
}

// mountRefresh: while the tls-controller reports TLSApplied=False CertificatePending on
// the node, its pod carries the annotation that makes the kubelet refresh its Secrets.
func mountRefresh(t *testing.T, te *testEnv, ns, name, podName string) {
	setTLSApplied := func(status metav1.ConditionStatus, reason string) {
		eventually(t, "TLSApplied written", func() error {
			var vn v1alpha1.ValkeyNode
			te.get(t, ns, name, &vn)
			meta.SetStatusCondition(&vn.Status.Conditions, metav1.Condition{
				Type: v1alpha1.ConditionTLSApplied, Status: status, Reason: reason, Message: "set by the test", ObservedGeneration: vn.Generation,
			})
			return te.c.Status().Update(context.Background(), &vn)
		})
	}
	setTLSApplied(metav1.ConditionFalse, v1alpha1.ReasonCertificatePending)
	var vn v1alpha1.ValkeyNode
	te.get(t, ns, name, &vn)
	since := meta.FindStatusCondition(vn.Status.Conditions, v1alpha1.ConditionTLSApplied).LastTransitionTime.UTC().Format(time.RFC3339)
	var p corev1.Pod
	te.waitObject(t, ns, podName, &p, func() error {
		if got := p.Annotations[v1alpha1.AnnotationRefreshMounts]; !strings.HasPrefix(got, since+"+") {
			return fmt.Errorf("annotation %s = %q, want it to name the wait since %s", v1alpha1.AnnotationRefreshMounts, got, since)
		}
		return nil
	})
	setTLSApplied(metav1.ConditionTrue, v1alpha1.ReasonCertificateServed)
}

// steadyStateWritesNothing triggers passes and checks that no object changed.
func steadyStateWritesNothing(t *testing.T, te *testEnv, ns, name, podName string) {
	// Let the passes caused by the previous steps settle first.
	key := types.NamespacedName{Namespace: ns, Name: name}
	rv := func() []string {
		var vn v1alpha1.ValkeyNode
		var cm corev1.ConfigMap
		var sts appsv1.StatefulSet
		var p corev1.Pod
		te.get(t, ns, name, &vn)
		te.get(t, ns, name, &cm)
		te.get(t, ns, name, &sts)
		te.get(t, ns, podName, &p)
		return []string{vn.ResourceVersion, cm.ResourceVersion, sts.ResourceVersion, p.ResourceVersion}
	}
	var before []string
	eventually(t, "a settled state", func() error {
		a := rv()
		n := te.passCount(key)
		triggerPass(t, te, ns, podName)
		eventually(t, "a pass", func() error {
			if te.passCount(key) <= n {
				return errors.New("no pass yet")
			}
			return nil
		})
		before = rv()
		if strings.Join(a[:3], ",") != strings.Join(before[:3], ",") {
			return fmt.Errorf("still changing: %v -> %v", a, before)
		}
		return nil
	})
	n := te.passCount(key)
	for range 3 {
		triggerPass(t, te, ns, podName)
	}
	eventually(t, "more passes", func() error {
		if te.passCount(key) < n+2 {
			return errors.New("waiting")
		}
		return nil
	})
	if after := rv(); strings.Join(after[:3], ",") != strings.Join(before[:3], ",") {
		t.Errorf("a pass with nothing to do wrote: resource versions %v -> %v (node, ConfigMap, StatefulSet)", before, after)
	}
}

// triggerPass changes an annotation of the pod, which the controller watches.
func triggerPass(t *testing.T, te *testEnv, ns, podName string) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: ns}}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"test/poke":%q}}}`, metav1.Now().Format("15:04:05.000000"))
	if err := te.c.Patch(context.Background(), p, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("poke pod: %v", err)
	}
}

// liveConfig changes live keys: applied on the server, then recorded; a refused value
// changes nothing.
func liveConfig(t *testing.T, te *testEnv, srv *valkeytest.Server, ns, name, podName string) {
	var before appsv1.StatefulSet
	te.get(t, ns, name, &before)
	te.updateNode(t, ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Config["maxmemory"] = "200mb" })
	te.waitCondition(t, ns, name, v1alpha1.ConditionConfigApplied, metav1.ConditionTrue, v1alpha1.ReasonConfigApplied, nil)
	eventually(t, "maxmemory on the server", func() error {
		if got := configGet(t, srv, "maxmemory"); got != "209715200" {
			return fmt.Errorf("maxmemory = %s", got)
		}
		return nil
	})
	var cm corev1.ConfigMap
	te.waitObject(t, ns, name, &cm, func() error {
		if !strings.Contains(cm.Data[ConfigKey], "maxmemory 200mb") || !strings.Contains(cm.Annotations[AnnotationConfig], `"maxmemory":"200mb"`) {
			return fmt.Errorf("ConfigMap not updated: %v", cm.Annotations)
		}
		return nil
	})
	te.waitEvent(t, ns, name, "ConfigApplied")

	te.updateNode(t, ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Config["maxmemory-policy"] = "bogus" })
	te.waitCondition(t, ns, name, v1alpha1.ConditionConfigApplied, metav1.ConditionFalse, v1alpha1.ReasonConfigRefused,
		contains("maxmemory-policy", "must be one of"))
	te.waitEvent(t, ns, name, "ConfigRefused")
	te.get(t, ns, name, &cm)
	if strings.Contains(cm.Data[ConfigKey], "bogus") || strings.Contains(cm.Annotations[AnnotationConfig], "maxmemory-policy") {
		t.Errorf("a refused value reached the ConfigMap: %v", cm.Annotations)
	}
	if got := configGet(t, srv, "maxmemory-policy"); got != "noeviction" {
		t.Errorf("maxmemory-policy = %s", got)
	}

	te.updateNode(t, ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Config["maxmemory-policy"] = "allkeys-lru" })
	te.waitCondition(t, ns, name, v1alpha1.ConditionConfigApplied, metav1.ConditionTrue, v1alpha1.ReasonConfigApplied, nil)
	eventually(t, "maxmemory-policy on the server", func() error {
		if got := configGet(t, srv, "maxmemory-policy"); got != "allkeys-lru" {
			return fmt.Errorf("maxmemory-policy = %s", got)
		}
		return nil
	})
	var after appsv1.StatefulSet
	var p corev1.Pod
	te.get(t, ns, name, &after)
	te.get(t, ns, podName, &p)
	if after.Spec.Template.Annotations[AnnotationTemplateHash] != before.Spec.Template.Annotations[AnnotationTemplateHash] {
		t.Error("a live change changed the pod template")
	}
	te.waitCondition(t, ns, name, v1alpha1.ConditionPodReady, metav1.ConditionTrue, v1alpha1.ReasonPodRunning, nil)
}

// revisionGate changes a non-live key: held back and reported until the revision is
// raised; then the template and the ConfigMap change together.
func revisionGate(t *testing.T, te *testEnv, ns, name, ip string) {
	var sts, cur appsv1.StatefulSet
	var cm corev1.ConfigMap
	te.get(t, ns, name, &sts)
	te.get(t, ns, name, &cm)
	te.updateNode(t, ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Config["appendonly"] = "yes" })
	te.waitCondition(t, ns, name, v1alpha1.ConditionPodReady, metav1.ConditionTrue, v1alpha1.ReasonUpdatePending,
		contains("config appendonly", "raise spec.revision"))
	te.get(t, ns, name, &cur)
	if cur.Spec.Template.Annotations[AnnotationTemplateHash] != sts.Spec.Template.Annotations[AnnotationTemplateHash] || cur.Annotations[AnnotationRevision] != "1" {
		t.Fatal("the StatefulSet changed without a new revision")
	}
	var cmNow corev1.ConfigMap
	te.get(t, ns, name, &cmNow)
	if cmNow.Data[ConfigKey] != cm.Data[ConfigKey] {
		t.Fatal("the ConfigMap's non-live part changed without a new revision")
	}

	te.updateNode(t, ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Revision = 2 })
	vn := te.node(t, ns, name)
	want := mustTemplate(t, vn).Annotations[AnnotationTemplateHash]
	te.waitObject(t, ns, name, &cur, func() error {
		if cur.Annotations[AnnotationRevision] != "2" || cur.Spec.Template.Annotations[AnnotationTemplateHash] != want {
			return fmt.Errorf("StatefulSet annotations %v", cur.Annotations)
		}
		return nil
	})
	te.waitObject(t, ns, name, &cmNow, func() error {
		if !strings.Contains(cmNow.Data[ConfigKey], "appendonly yes") {
			return errors.New("the ConfigMap lacks appendonly yes")
		}
		return nil
	})
	te.waitEvent(t, ns, name, "Replacing")
	// The StatefulSet controller would now replace the pod; do what it does.
	var old corev1.Pod
	te.get(t, ns, name+"-0", &old)
	if err := te.c.Delete(context.Background(), &old); err != nil {
		t.Fatal(err)
	}
	eventually(t, "old pod gone", func() error {
		if err := te.c.Get(context.Background(), client.ObjectKeyFromObject(&old), &corev1.Pod{}); err == nil {
			return errors.New("still there")
		}
		return nil
	})
	te.startPod(t, ns, name+"-0", cur.Spec.Template, ip)
	eventually(t, "status.revision 2", func() error {
		if r := te.node(t, ns, name).Status.Revision; r != 2 {
			return fmt.Errorf("revision %d", r)
		}
		return nil
	})
	te.waitCondition(t, ns, name, v1alpha1.ConditionPodReady, metav1.ConditionTrue, v1alpha1.ReasonPodRunning, nil)

	// A new revision that builds the same pod only records itself.
	te.updateNode(t, ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Revision = 3 })
	te.waitObject(t, ns, name, &cur, func() error {
		if cur.Annotations[AnnotationRevision] != "3" {
			return errors.New("revision 3 not recorded")
		}
		return nil
	})
	if cur.Spec.Template.Annotations[AnnotationTemplateHash] != want {
		t.Error("an unchanged pod was rebuilt")
	}
	te.waitEvent(t, ns, name, "RevisionRecorded")
	eventually(t, "status.revision 3", func() error {
		if r := te.node(t, ns, name).Status.Revision; r != 3 {
			return fmt.Errorf("revision %d", r)
		}
		return nil
	})
}

// operatorUpgrade makes the StatefulSet look built by an operator that rendered a
// different template for the same revision: it must be reported, not rolled.
func operatorUpgrade(t *testing.T, te *testEnv, ns, name string) {
	var sts appsv1.StatefulSet
	te.get(t, ns, name, &sts)
	sts.Annotations[AnnotationTemplateHash] = "older-operator"
	sts.Spec.Template.Annotations[AnnotationConfigHash] = "older-rendering"
	if err := te.c.Update(context.Background(), &sts); err != nil {
		t.Fatal(err)
	}
	te.waitCondition(t, ns, name, v1alpha1.ConditionPodReady, metav1.ConditionTrue, v1alpha1.ReasonUpdatePending, contains("the pod template"))
	var cur appsv1.StatefulSet
	te.get(t, ns, name, &cur)
	if cur.Annotations[AnnotationTemplateHash] != "older-operator" || cur.Spec.Template.Annotations[AnnotationConfigHash] != "older-rendering" {
		t.Fatal("the controller rebuilt the template without a new revision")
	}
	te.updateNode(t, ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Revision++ })
	want := mustTemplate(t, te.node(t, ns, name)).Annotations[AnnotationTemplateHash]
	te.waitObject(t, ns, name, &cur, func() error {
		if cur.Annotations[AnnotationTemplateHash] != want {
			return fmt.Errorf("template hash %s, want %s", cur.Annotations[AnnotationTemplateHash], want)
		}
		return nil
	})
}

// TestEnvDeployment checks the Deployment workload and the pod states of PodReady.
func TestEnvDeployment(t *testing.T) {
	te := startEnv(t)
	ns := te.namespace(t)
	const name = "demo-dep01"
	te.newNode(t, ns, name, withWorkload(v1alpha1.WorkloadDeployment))
	vn := te.waitCondition(t, ns, name, v1alpha1.ConditionPodReady, metav1.ConditionFalse, v1alpha1.ReasonPodPending, nil)
	var d appsv1.Deployment
	te.waitObject(t, ns, name, &d, func() error { return controlledBy(&d, vn) })
	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || *d.Spec.Replicas != 1 {
		t.Errorf("Deployment spec = %+v", d.Spec)
	}
	te.absent(t, ns, name, &appsv1.StatefulSet{})

	pod := te.startPod(t, ns, name+"-5d8f9-abcde", d.Spec.Template, "10.200.1.1")
	te.waitCondition(t, ns, name, v1alpha1.ConditionPodReady, metav1.ConditionFalse, v1alpha1.ReasonServerUnreachable, contains("connection refused"))

	cases := []struct {
		name   string
		status func() corev1.PodStatus
		reason string
		msg    string
	}{
		{"unschedulable", func() corev1.PodStatus {
			return corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient memory."}}}
		}, v1alpha1.ReasonPodUnschedulable, "3 Insufficient memory"},
		{"image pull", func() corev1.PodStatus {
			return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: ServerContainer, Image: "valkey/valkey:nope",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}}}
		}, v1alpha1.ReasonImagePullBackOff, "valkey/valkey:nope"},
		{"crash loop", func() corev1.PodStatus {
			st := runningStatus("10.200.1.1")
			st.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
			st.ContainerStatuses[0].RestartCount = 5
			st.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}
			return st
		}, v1alpha1.ReasonCrashLoop, "restarted 5 times; last exited with code 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			te.setPodStatus(t, pod, tc.status())
			te.waitCondition(t, ns, name, v1alpha1.ConditionPodReady, metav1.ConditionFalse, tc.reason, contains(tc.msg))
			te.waitEvent(t, ns, name, tc.reason)
		})
	}
}

// TestEnvBarePod checks workloadType Pod: a dead pod is reported and never restarted,
// a vanished one is not recreated, and only a new revision brings a new pod.
func TestEnvBarePod(t *testing.T) {
	te := startEnv(t)
	ns := te.namespace(t)
	const name, ip = "demo-pod01", "10.200.2.1"
	srv := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	te.dialer.set(ip, srv.Dial(t))
	te.newNode(t, ns, name, withWorkload(v1alpha1.WorkloadPod))
	vn := te.waitCondition(t, ns, name, v1alpha1.ConditionPodReady, metav1.ConditionFalse, v1alpha1.ReasonPodPending, nil)
	var pod corev1.Pod
	te.waitObject(t, ns, name, &pod, func() error { return controlledBy(&pod, vn) })
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever || pod.Annotations[AnnotationRevision] != "1" {
		t.Errorf("pod restartPolicy %s, annotations %v", pod.Spec.RestartPolicy, pod.Annotations)
	}
	te.setPodStatus(t, &pod, runningStatus(ip))
	te.waitCondition(t, ns, name, v1alpha1.ConditionPodReady, metav1.ConditionTrue, v1alpha1.ReasonPodRunning, nil)

	failed := runningStatus(ip)
	failed.Phase = corev1.PodFailed
	failed.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}
	te.setPodStatus(t, &pod, failed)
	te.waitCondition(t, ns, name, v1alpha1.ConditionPodReady, metav1.ConditionFalse, v1alpha1.ReasonPodTerminated, contains("exited with code 137 (OOMKilled)"))
	te.waitEvent(t, ns, name, v1alpha1.ReasonPodTerminated)

	if err := te.c.Delete(context.Background(), &pod); err != nil {
		t.Fatal(err)
	}
	te.waitCondition(t, ns, name, v1alpha1.ConditionPodReady, metav1.ConditionFalse, v1alpha1.ReasonPodMissing, contains("pod "+name+" is gone"))
	key := types.NamespacedName{Namespace: ns, Name: name}
	n := te.passCount(key)
	te.updateNode(t, ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Annotations = map[string]string{"test/poke": "1"} })
	eventually(t, "another pass", func() error {
		if te.passCount(key) <= n {
			return errors.New("waiting")
		}
		return nil
	})
	te.absent(t, ns, name, &corev1.Pod{})

	// A new revision authorises a new pod.
	te.updateNode(t, ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Revision = 2; vn.Spec.Image = "valkey/valkey:8.1.1" })
	te.waitObject(t, ns, name, &pod, func() error {
		if pod.Annotations[AnnotationRevision] != "2" || container(pod.Spec, ServerContainer).Image != "valkey/valkey:8.1.1" {
			return fmt.Errorf("pod annotations %v", pod.Annotations)
		}
		return nil
	})
	te.setPodStatus(t, &pod, runningStatus(ip))
	te.waitCondition(t, ns, name, v1alpha1.ConditionPodReady, metav1.ConditionTrue, v1alpha1.ReasonPodRunning, nil)

	// A new revision that changes the pod replaces the running one.
	oldUID := pod.UID
	te.updateNode(t, ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Revision = 3; vn.Spec.Image = "valkey/valkey:9.1.2" })
	te.waitObject(t, ns, name, &pod, func() error {
		if pod.UID == oldUID || container(pod.Spec, ServerContainer).Image != "valkey/valkey:9.1.2" {
			return errors.New("not replaced yet")
		}
		return nil
	})
	te.waitEvent(t, ns, name, "Replacing")
}

// TestEnvPersistence checks the claim: creation, ownership by reclaim policy, growth
// and the StorageReady reasons.
func TestEnvPersistence(t *testing.T) {
	te := startEnv(t)
	ns := te.namespace(t)
	for _, sc := range []*storagev1.StorageClass{
		{ObjectMeta: metav1.ObjectMeta{Name: ns + "-grows"}, Provisioner: "example.com/none", AllowVolumeExpansion: ptr.To(true)},
		{ObjectMeta: metav1.ObjectMeta{Name: ns + "-fixed"}, Provisioner: "example.com/none"},
	} {
		te.create(t, sc)
	}
	withClass := func(class string) func(*v1alpha1.ValkeyNode) {
		return func(vn *v1alpha1.ValkeyNode) {
			vn.Spec.Persistence = &v1alpha1.PersistenceSpec{Size: resource.MustParse("1Gi"), StorageClassName: ptr.To(class), ReclaimPolicy: v1alpha1.ReclaimDelete}
		}
	}
	bind := func(t *testing.T, claim string, capacity string) {
		t.Helper()
		eventually(t, "bind claim "+claim, func() error {
			var pvc corev1.PersistentVolumeClaim
			if err := te.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: claim}, &pvc); err != nil {
				return err
			}
			pvc.Status.Phase = corev1.ClaimBound
			pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}
			return te.c.Status().Update(context.Background(), &pvc)
		})
	}

	t.Run("grows", func(t *testing.T) {
		const name = "demo-pvc01"
		te.newNode(t, ns, name, withClass(ns+"-grows"))
		vn := te.waitCondition(t, ns, name, v1alpha1.ConditionStorageReady, metav1.ConditionFalse, v1alpha1.ReasonStoragePending, nil)
		var pvc corev1.PersistentVolumeClaim
		te.waitObject(t, ns, name+"-data", &pvc, func() error { return controlledBy(&pvc, vn) })
		te.waitEvent(t, ns, name, "ClaimCreated")
		var sts appsv1.StatefulSet
		te.waitObject(t, ns, name, &sts, nil)
		if v := volume(sts.Spec.Template.Spec, volumeData); v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != name+"-data" ||
			len(sts.Spec.VolumeClaimTemplates) != 0 {
			t.Errorf("data volume = %+v", v)
		}
		bind(t, name+"-data", "1Gi")
		te.waitCondition(t, ns, name, v1alpha1.ConditionStorageReady, metav1.ConditionTrue, v1alpha1.ReasonStorageBound, contains("1Gi"))

		te.updateNode(t, ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Persistence.Size = resource.MustParse("2Gi") })
		te.waitCondition(t, ns, name, v1alpha1.ConditionStorageReady, metav1.ConditionFalse, v1alpha1.ReasonStorageResizing, contains("from 1Gi to 2Gi"))
		te.get(t, ns, name+"-data", &pvc)
		if got := pvc.Spec.Resources.Requests.Storage().String(); got != "2Gi" {
			t.Errorf("request = %s", got)
		}
		te.waitEvent(t, ns, name, "ClaimResizing")
		bind(t, name+"-data", "2Gi")
		te.waitCondition(t, ns, name, v1alpha1.ConditionStorageReady, metav1.ConditionTrue, v1alpha1.ReasonStorageBound, contains("2Gi"))
		var after appsv1.StatefulSet
		te.get(t, ns, name, &after)
		if after.Spec.Template.Annotations[AnnotationTemplateHash] != sts.Spec.Template.Annotations[AnnotationTemplateHash] {
			t.Error("growing the claim changed the pod template")
		}

		te.updateNode(t, ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Persistence.ReclaimPolicy = v1alpha1.ReclaimRetain })
		te.waitObject(t, ns, name+"-data", &pvc, func() error {
			if len(pvc.OwnerReferences) != 0 {
				return fmt.Errorf("owners %v", pvc.OwnerReferences)
			}
			return nil
		})
	})

	t.Run("class without expansion", func(t *testing.T) {
		const name = "demo-pvc02"
		te.newNode(t, ns, name, withClass(ns+"-fixed"))
		var pvc corev1.PersistentVolumeClaim
		te.waitObject(t, ns, name+"-data", &pvc, nil)
		bind(t, name+"-data", "1Gi")
		te.waitCondition(t, ns, name, v1alpha1.ConditionStorageReady, metav1.ConditionTrue, v1alpha1.ReasonStorageBound, nil)
		te.updateNode(t, ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Persistence.Size = resource.MustParse("5Gi") })
		te.waitCondition(t, ns, name, v1alpha1.ConditionStorageReady, metav1.ConditionFalse, v1alpha1.ReasonResizeInfeasible,
			contains("does not allow volume expansion", "stays at 1Gi"))
		te.get(t, ns, name+"-data", &pvc)
		if got := pvc.Spec.Resources.Requests.Storage().String(); got != "1Gi" {
			t.Errorf("request = %s, want it unchanged", got)
		}
	})
}

// TestEnvInvalidSpec checks the guard: an invalid node is reported and not acted on.
func TestEnvInvalidSpec(t *testing.T) {
	te := startEnv(t)
	ns := te.namespace(t)
	const name = "demo-bad01"
	te.newNode(t, ns, name, withWorkload(v1alpha1.WorkloadDeployment), withPersistence("1Gi", ""))
	te.waitCondition(t, ns, name, v1alpha1.ConditionInvalidSpec, metav1.ConditionTrue, v1alpha1.ReasonInvalid, contains("persistence requires workloadType StatefulSet"))
	vn := te.waitCondition(t, ns, name, v1alpha1.ConditionPodReady, metav1.ConditionUnknown, v1alpha1.ReasonInvalid, nil)
	if len(vn.Status.Conditions) != 4 {
		t.Errorf("conditions = %+v", vn.Status.Conditions)
	}
	te.absent(t, ns, name, &corev1.ConfigMap{})
	te.absent(t, ns, name, &appsv1.Deployment{})
}
