package node

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
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
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// configGet reads one parameter from a test server.
func configGet(srv *valkeytest.Server, key string) string {
	GinkgoHelper()
	m, err := srv.Dial(GinkgoTB()).ConfigGet(context.Background(), key)
	Expect(err).NotTo(HaveOccurred(), "config get %s", key)
	return m[key]
}

// A StatefulSet node through creation, a running pod, the revision gate, live config and
// a simulated operator upgrade.
var _ = Describe("A StatefulSet node", Ordered, func() {
	const name, ip = "demo-sts01", "10.200.0.1"
	var (
		ns      string
		srv     *valkeytest.Server
		podName string
	)
	BeforeAll(func() {
		ns = te.namespace()
		srv = valkeytest.Start(GinkgoTB(), 1, valkeytest.Options{})[0]
		te.dialer.set(ip, srv.Dial(GinkgoTB()))
		te.newNode(ns, name)
	})

	It("gets its ConfigMap and StatefulSet, then reports the running pod", func() {
		vn := te.waitCondition(ns, name, v1alpha1.ConditionPodReady, metav1.ConditionFalse, v1alpha1.ReasonPodPending, nil)
		var cm corev1.ConfigMap
		te.waitObject(ns, name, &cm, func(g Gomega) { controlledBy(g, &cm, vn) })
		Expect(cm.Data[ConfigKey]).To(Equal(string(renderConfig(vn, normaliseConfig(vn.Spec.Config)))), "valkey.conf")
		var sts appsv1.StatefulSet
		te.waitObject(ns, name, &sts, func(g Gomega) { controlledBy(g, &sts, vn) })
		tmpl := mustTemplate(GinkgoTB(), vn)
		Expect(sts.Annotations).To(HaveKeyWithValue(AnnotationRevision, "1"))
		Expect(sts.Annotations).To(HaveKeyWithValue(AnnotationTemplateHash, tmpl.Annotations[AnnotationTemplateHash]))
		Expect(sts.Spec.Template.Annotations).To(HaveKeyWithValue(AnnotationTemplateHash, tmpl.Annotations[AnnotationTemplateHash]))
		Expect(sts.Spec.ServiceName).To(Equal("demo-nodes"))
		Expect(*sts.Spec.Replicas).To(BeEquivalentTo(1))
		Expect(sts.Spec.PodManagementPolicy).To(Equal(appsv1.ParallelPodManagement))
		te.waitCondition(ns, name, v1alpha1.ConditionStorageReady, metav1.ConditionTrue, v1alpha1.ReasonStorageNotUsed, nil)
		te.waitCondition(ns, name, v1alpha1.ConditionConfigApplied, metav1.ConditionTrue, v1alpha1.ReasonConfigApplied, nil)
		te.waitCondition(ns, name, v1alpha1.ConditionInvalidSpec, metav1.ConditionFalse, v1alpha1.ReasonValid, nil)
		te.waitEvent(ns, name, "Created")

		pod := te.startPod(ns, name+"-0", sts.Spec.Template, ip)
		podName = pod.Name
		vn = te.waitCondition(ns, name, v1alpha1.ConditionPodReady, metav1.ConditionTrue, v1alpha1.ReasonPodRunning, contains("as primary"))
		st := vn.Status
		Expect(st.PodName).To(Equal(pod.Name))
		Expect(st.PodIP).To(Equal(ip))
		Expect(st.Role).To(Equal(v1alpha1.RolePrimary))
		Expect(st.Version).To(Equal(srv.Version.String()))
		Expect(st.Revision).To(BeEquivalentTo(1))
		Eventually(func(g Gomega) {
			var p corev1.Pod
			var s appsv1.StatefulSet
			te.get(g, ns, pod.Name, &p)
			te.get(g, ns, name, &s)
			g.Expect(p.Labels).To(HaveKeyWithValue(v1alpha1.LabelRole, "primary"), "pod labels")
			g.Expect(s.Labels).To(HaveKeyWithValue(v1alpha1.LabelRole, "primary"), "StatefulSet labels")
			g.Expect(s.Spec.Template.Labels[v1alpha1.LabelRole]).To(BeEmpty(), "the role label reached the template")
		}).Should(Succeed(), "role labels")
	})

	It("writes nothing in the steady state", func() {
		// Let the passes caused by the previous steps settle first.
		key := types.NamespacedName{Namespace: ns, Name: name}
		rv := func(g Gomega) []string {
			var vn v1alpha1.ValkeyNode
			var cm corev1.ConfigMap
			var sts appsv1.StatefulSet
			var p corev1.Pod
			te.get(g, ns, name, &vn)
			te.get(g, ns, name, &cm)
			te.get(g, ns, name, &sts)
			te.get(g, ns, podName, &p)
			return []string{vn.ResourceVersion, cm.ResourceVersion, sts.ResourceVersion, p.ResourceVersion}
		}
		var before []string
		Eventually(func(g Gomega) {
			a := rv(g)
			n := te.passCount(key)
			triggerPass(g, ns, podName)
			g.Eventually(func() int64 { return te.passCount(key) }).Should(BeNumerically(">", n), "a pass")
			before = rv(g)
			g.Expect(before[:3]).To(Equal(a[:3]), "still changing (node, ConfigMap, StatefulSet)")
		}).Should(Succeed(), "a settled state")
		n := te.passCount(key)
		for range 3 {
			triggerPass(Default, ns, podName)
		}
		Eventually(func() int64 { return te.passCount(key) }).Should(BeNumerically(">=", n+2), "more passes")
		Expect(rv(Default)[:3]).To(Equal(before[:3]), "a pass with nothing to do wrote (resource versions of node, ConfigMap, StatefulSet)")
	})

	// Live keys are applied on the server, then recorded; a refused value changes nothing.
	It("applies live config without a new pod", func() {
		var before appsv1.StatefulSet
		te.get(Default, ns, name, &before)
		te.updateNode(ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Config["maxmemory"] = "200mb" })
		te.waitCondition(ns, name, v1alpha1.ConditionConfigApplied, metav1.ConditionTrue, v1alpha1.ReasonConfigApplied, nil)
		Eventually(configGet).WithArguments(srv, "maxmemory").Should(Equal("209715200"), "maxmemory on the server")
		var cm corev1.ConfigMap
		te.waitObject(ns, name, &cm, func(g Gomega) {
			g.Expect(cm.Data[ConfigKey]).To(ContainSubstring("maxmemory 200mb"), "ConfigMap not updated")
			g.Expect(cm.Annotations[AnnotationConfig]).To(ContainSubstring(`"maxmemory":"200mb"`), "ConfigMap not updated")
		})
		te.waitEvent(ns, name, "ConfigApplied")

		te.updateNode(ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Config["maxmemory-policy"] = "bogus" })
		te.waitCondition(ns, name, v1alpha1.ConditionConfigApplied, metav1.ConditionFalse, v1alpha1.ReasonConfigRefused,
			contains("maxmemory-policy", "must be one of"))
		te.waitEvent(ns, name, "ConfigRefused")
		te.get(Default, ns, name, &cm)
		Expect(cm.Data[ConfigKey]).NotTo(ContainSubstring("bogus"), "a refused value reached the ConfigMap")
		Expect(cm.Annotations[AnnotationConfig]).NotTo(ContainSubstring("maxmemory-policy"), "a refused value reached the ConfigMap")
		Expect(configGet(srv, "maxmemory-policy")).To(Equal("noeviction"))

		te.updateNode(ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Config["maxmemory-policy"] = "allkeys-lru" })
		te.waitCondition(ns, name, v1alpha1.ConditionConfigApplied, metav1.ConditionTrue, v1alpha1.ReasonConfigApplied, nil)
		Eventually(configGet).WithArguments(srv, "maxmemory-policy").Should(Equal("allkeys-lru"), "maxmemory-policy on the server")

		By("removing a live key: the server goes back to the value a restart would give it")
		te.updateNode(ns, name, func(vn *v1alpha1.ValkeyNode) { delete(vn.Spec.Config, "maxmemory-policy") })
		Eventually(configGet).WithArguments(srv, "maxmemory-policy").Should(Equal("noeviction"), "maxmemory-policy on the server")
		te.waitCondition(ns, name, v1alpha1.ConditionConfigApplied, metav1.ConditionTrue, v1alpha1.ReasonConfigApplied, nil)
		te.waitObject(ns, name, &cm, func(g Gomega) {
			g.Expect(cm.Annotations[AnnotationConfig]).NotTo(ContainSubstring("maxmemory-policy"), "ConfigMap not updated")
		})
		var after appsv1.StatefulSet
		te.get(Default, ns, name, &after)
		Expect(after.Spec.Template.Annotations[AnnotationTemplateHash]).To(Equal(before.Spec.Template.Annotations[AnnotationTemplateHash]),
			"a live change changed the pod template")
		te.waitCondition(ns, name, v1alpha1.ConditionPodReady, metav1.ConditionTrue, v1alpha1.ReasonPodRunning, nil)
	})

	// A non-live key is held back and reported until the revision is raised; then the
	// template and the ConfigMap change together.
	It("holds a non-live change back until the revision is raised", func() {
		var sts, cur appsv1.StatefulSet
		var cm corev1.ConfigMap
		te.get(Default, ns, name, &sts)
		te.get(Default, ns, name, &cm)
		te.updateNode(ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Config["appendonly"] = "yes" })
		te.waitCondition(ns, name, v1alpha1.ConditionPodReady, metav1.ConditionTrue, v1alpha1.ReasonUpdatePending,
			contains("config appendonly", "raise spec.revision"))
		te.get(Default, ns, name, &cur)
		Expect(cur.Spec.Template.Annotations[AnnotationTemplateHash]).To(Equal(sts.Spec.Template.Annotations[AnnotationTemplateHash]),
			"the StatefulSet changed without a new revision")
		Expect(cur.Annotations).To(HaveKeyWithValue(AnnotationRevision, "1"), "the StatefulSet changed without a new revision")
		var cmNow corev1.ConfigMap
		te.get(Default, ns, name, &cmNow)
		Expect(cmNow.Data[ConfigKey]).To(Equal(cm.Data[ConfigKey]), "the ConfigMap's non-live part changed without a new revision")

		te.updateNode(ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Revision = 2 })
		want := mustTemplate(GinkgoTB(), te.node(Default, ns, name)).Annotations[AnnotationTemplateHash]
		te.waitObject(ns, name, &cur, func(g Gomega) {
			g.Expect(cur.Annotations).To(HaveKeyWithValue(AnnotationRevision, "2"))
			g.Expect(cur.Spec.Template.Annotations).To(HaveKeyWithValue(AnnotationTemplateHash, want))
		})
		te.waitObject(ns, name, &cmNow, func(g Gomega) {
			g.Expect(cmNow.Data[ConfigKey]).To(ContainSubstring("appendonly yes"))
		})
		te.waitEvent(ns, name, "Replacing")
		By("replacing the pod, as the StatefulSet controller would")
		var old corev1.Pod
		te.get(Default, ns, name+"-0", &old)
		Expect(te.c.Delete(context.Background(), &old)).To(Succeed())
		Eventually(func() error {
			return te.c.Get(context.Background(), client.ObjectKeyFromObject(&old), &corev1.Pod{})
		}).ShouldNot(Succeed(), "old pod gone")
		te.startPod(ns, name+"-0", cur.Spec.Template, ip)
		Eventually(func(g Gomega) int64 { return te.node(g, ns, name).Status.Revision }).Should(BeEquivalentTo(2), "status.revision")
		te.waitCondition(ns, name, v1alpha1.ConditionPodReady, metav1.ConditionTrue, v1alpha1.ReasonPodRunning, nil)

		By("recording a new revision that builds the same pod, without a new pod")
		te.updateNode(ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Revision = 3 })
		te.waitObject(ns, name, &cur, func(g Gomega) {
			g.Expect(cur.Annotations).To(HaveKeyWithValue(AnnotationRevision, "3"), "revision 3 recorded")
		})
		Expect(cur.Spec.Template.Annotations[AnnotationTemplateHash]).To(Equal(want), "an unchanged pod was rebuilt")
		te.waitEvent(ns, name, "RevisionRecorded")
		Eventually(func(g Gomega) int64 { return te.node(g, ns, name).Status.Revision }).Should(BeEquivalentTo(3), "status.revision")
	})

	// The StatefulSet looks built by an operator that rendered a different template for
	// the same revision: reported, not rolled.
	It("reports a new rendering of the template and does not roll it by itself", func() {
		var sts appsv1.StatefulSet
		te.get(Default, ns, name, &sts)
		sts.Annotations[AnnotationTemplateHash] = "older-operator"
		sts.Spec.Template.Annotations[AnnotationConfigHash] = "older-rendering"
		Expect(te.c.Update(context.Background(), &sts)).To(Succeed())
		te.waitCondition(ns, name, v1alpha1.ConditionPodReady, metav1.ConditionTrue, v1alpha1.ReasonUpdatePending, contains("the pod template"))
		var cur appsv1.StatefulSet
		te.get(Default, ns, name, &cur)
		Expect(cur.Annotations).To(HaveKeyWithValue(AnnotationTemplateHash, "older-operator"), "the controller rebuilt the template without a new revision")
		Expect(cur.Spec.Template.Annotations).To(HaveKeyWithValue(AnnotationConfigHash, "older-rendering"), "the controller rebuilt the template without a new revision")
		te.updateNode(ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Revision++ })
		want := mustTemplate(GinkgoTB(), te.node(Default, ns, name)).Annotations[AnnotationTemplateHash]
		te.waitObject(ns, name, &cur, func(g Gomega) {
			g.Expect(cur.Annotations).To(HaveKeyWithValue(AnnotationTemplateHash, want))
		})
	})

	// While the tls-controller reports TLSApplied=False CertificatePending on the node,
	// its pod carries the annotation that makes the kubelet refresh its Secrets.
	It("nudges the kubelet while a certificate is pending", func() {
		setTLSApplied := func(status metav1.ConditionStatus, reason string) {
			Eventually(func(g Gomega) error {
				var vn v1alpha1.ValkeyNode
				te.get(g, ns, name, &vn)
				meta.SetStatusCondition(&vn.Status.Conditions, metav1.Condition{
					Type: v1alpha1.ConditionTLSApplied, Status: status, Reason: reason, Message: "set by the test", ObservedGeneration: vn.Generation,
				})
				return te.c.Status().Update(context.Background(), &vn)
			}).Should(Succeed(), "TLSApplied written")
		}
		setTLSApplied(metav1.ConditionFalse, v1alpha1.ReasonCertificatePending)
		vn := te.node(Default, ns, name)
		since := meta.FindStatusCondition(vn.Status.Conditions, v1alpha1.ConditionTLSApplied).LastTransitionTime.UTC().Format(time.RFC3339)
		var p corev1.Pod
		te.waitObject(ns, podName, &p, func(g Gomega) {
			g.Expect(p.Annotations[v1alpha1.AnnotationRefreshMounts]).To(HavePrefix(since+"+"), "annotation %s names the wait", v1alpha1.AnnotationRefreshMounts)
		})
		setTLSApplied(metav1.ConditionTrue, v1alpha1.ReasonCertificateServed)
	})
})

// triggerPass changes an annotation of the pod, which the controller watches.
func triggerPass(g Gomega, ns, podName string) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: ns}}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"test/poke":%q}}}`, metav1.Now().Format("15:04:05.000000"))
	g.Expect(te.c.Patch(context.Background(), p, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed(), "poke pod")
}

// The Deployment workload and the pod states of PodReady.
var _ = Describe("A Deployment node", Ordered, func() {
	const name = "demo-dep01"
	var (
		ns  string
		pod *corev1.Pod
	)
	BeforeAll(func() { ns = te.namespace() })

	It("gets a Deployment and reports a pod whose server does not answer", func() {
		te.newNode(ns, name, withWorkload(v1alpha1.WorkloadDeployment))
		vn := te.waitCondition(ns, name, v1alpha1.ConditionPodReady, metav1.ConditionFalse, v1alpha1.ReasonPodPending, nil)
		var d appsv1.Deployment
		te.waitObject(ns, name, &d, func(g Gomega) { controlledBy(g, &d, vn) })
		Expect(d.Spec.Strategy.Type).To(Equal(appsv1.RecreateDeploymentStrategyType))
		Expect(*d.Spec.Replicas).To(BeEquivalentTo(1))
		te.absent(ns, name, &appsv1.StatefulSet{})

		pod = te.startPod(ns, name+"-5d8f9-abcde", d.Spec.Template, "10.200.1.1")
		te.waitCondition(ns, name, v1alpha1.ConditionPodReady, metav1.ConditionFalse, v1alpha1.ReasonServerUnreachable, contains("connection refused"))
	})

	DescribeTable("reports why its pod does not run",
		func(status func() corev1.PodStatus, reason, msg string) {
			te.setPodStatus(pod, status())
			te.waitCondition(ns, name, v1alpha1.ConditionPodReady, metav1.ConditionFalse, reason, contains(msg))
			te.waitEvent(ns, name, reason)
		},
		Entry("unschedulable", func() corev1.PodStatus {
			return corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient memory."}}}
		}, v1alpha1.ReasonPodUnschedulable, "3 Insufficient memory"),
		Entry("image pull", func() corev1.PodStatus {
			return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: ServerContainer, Image: "valkey/valkey:nope",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}}}
		}, v1alpha1.ReasonImagePullBackOff, "valkey/valkey:nope"),
		Entry("crash loop", func() corev1.PodStatus {
			st := runningStatus("10.200.1.1")
			st.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
			st.ContainerStatuses[0].RestartCount = 5
			st.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}
			return st
		}, v1alpha1.ReasonCrashLoop, "restarted 5 times; last exited with code 1"),
	)
})

// A missing PriorityClass keeps every workload type from creating the pod (the
// StatefulSet and Deployment controllers only say so in their own events or conditions,
// the API server refuses a bare pod): the node names the class whatever the type.
var _ = DescribeTable("names a missing PriorityClass",
	func(workload v1alpha1.WorkloadType) {
		ns := te.namespace()
		name := "demo-prio-" + strings.ToLower(string(workload))
		te.newNode(ns, name, withWorkload(workload), func(vn *v1alpha1.ValkeyNode) {
			vn.Spec.Scheduling = &v1alpha1.SchedulingSpec{PriorityClassName: "e2e-missing-priority"}
		})
		te.waitCondition(ns, name, v1alpha1.ConditionPodReady, metav1.ConditionFalse, v1alpha1.ReasonPriorityClassNotFound,
			contains("PriorityClass e2e-missing-priority not found"))
		te.waitEvent(ns, name, v1alpha1.ReasonPriorityClassNotFound)
	},
	Entry("StatefulSet", v1alpha1.WorkloadStatefulSet),
	Entry("Deployment", v1alpha1.WorkloadDeployment),
	Entry("Pod", v1alpha1.WorkloadPod),
)

// workloadType Pod: a dead pod is reported and never restarted, a vanished one is not
// recreated, and only a new revision brings a new pod.
var _ = It("runs a bare pod that only a new revision replaces", func() {
	ns := te.namespace()
	const name, ip = "demo-pod01", "10.200.2.1"
	srv := valkeytest.Start(GinkgoTB(), 1, valkeytest.Options{})[0]
	te.dialer.set(ip, srv.Dial(GinkgoTB()))
	te.newNode(ns, name, withWorkload(v1alpha1.WorkloadPod))
	vn := te.waitCondition(ns, name, v1alpha1.ConditionPodReady, metav1.ConditionFalse, v1alpha1.ReasonPodPending, nil)
	var pod corev1.Pod
	te.waitObject(ns, name, &pod, func(g Gomega) { controlledBy(g, &pod, vn) })
	Expect(pod.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
	Expect(pod.Annotations).To(HaveKeyWithValue(AnnotationRevision, "1"))
	te.setPodStatus(&pod, runningStatus(ip))
	te.waitCondition(ns, name, v1alpha1.ConditionPodReady, metav1.ConditionTrue, v1alpha1.ReasonPodRunning, nil)

	failed := runningStatus(ip)
	failed.Phase = corev1.PodFailed
	failed.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}
	te.setPodStatus(&pod, failed)
	te.waitCondition(ns, name, v1alpha1.ConditionPodReady, metav1.ConditionFalse, v1alpha1.ReasonPodTerminated, contains("exited with code 137 (OOMKilled)"))
	te.waitEvent(ns, name, v1alpha1.ReasonPodTerminated)

	Expect(te.c.Delete(context.Background(), &pod)).To(Succeed())
	te.waitCondition(ns, name, v1alpha1.ConditionPodReady, metav1.ConditionFalse, v1alpha1.ReasonPodMissing, contains("pod "+name+" is gone"))
	key := types.NamespacedName{Namespace: ns, Name: name}
	n := te.passCount(key)
	te.updateNode(ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Annotations = map[string]string{"test/poke": "1"} })
	Eventually(func() int64 { return te.passCount(key) }).Should(BeNumerically(">", n), "another pass")
	te.absent(ns, name, &corev1.Pod{})

	By("authorising a new pod with a new revision")
	te.updateNode(ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Revision = 2; vn.Spec.Image = "valkey/valkey:8.1.1" })
	te.waitObject(ns, name, &pod, func(g Gomega) {
		g.Expect(pod.Annotations).To(HaveKeyWithValue(AnnotationRevision, "2"))
		g.Expect(container(pod.Spec, ServerContainer).Image).To(Equal("valkey/valkey:8.1.1"))
	})
	te.setPodStatus(&pod, runningStatus(ip))
	te.waitCondition(ns, name, v1alpha1.ConditionPodReady, metav1.ConditionTrue, v1alpha1.ReasonPodRunning, nil)

	By("replacing the running pod for a new revision that changes it")
	oldUID := pod.UID
	te.updateNode(ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Revision = 3; vn.Spec.Image = "valkey/valkey:9.1.2" })
	te.waitObject(ns, name, &pod, func(g Gomega) {
		g.Expect(pod.UID).NotTo(Equal(oldUID), "not replaced yet")
		g.Expect(container(pod.Spec, ServerContainer).Image).To(Equal("valkey/valkey:9.1.2"))
	})
	te.waitEvent(ns, name, "Replacing")
})

// The claim: creation, ownership by reclaim policy, growth and the StorageReady reasons.
var _ = Describe("A node with persistence", Ordered, func() {
	var ns string
	withClass := func(class string) func(*v1alpha1.ValkeyNode) {
		return func(vn *v1alpha1.ValkeyNode) {
			vn.Spec.Persistence = &v1alpha1.PersistenceSpec{Size: resource.MustParse("1Gi"), StorageClassName: ptr.To(class), ReclaimPolicy: v1alpha1.ReclaimDelete}
		}
	}
	bind := func(claim string, capacity string) {
		GinkgoHelper()
		Eventually(func() error {
			var pvc corev1.PersistentVolumeClaim
			if err := te.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: claim}, &pvc); err != nil {
				return err
			}
			pvc.Status.Phase = corev1.ClaimBound
			pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}
			return te.c.Status().Update(context.Background(), &pvc)
		}).Should(Succeed(), "bind claim %s", claim)
	}
	BeforeAll(func() {
		ns = te.namespace()
		for _, sc := range []*storagev1.StorageClass{
			{ObjectMeta: metav1.ObjectMeta{Name: ns + "-grows"}, Provisioner: "example.com/none", AllowVolumeExpansion: ptr.To(true)},
			{ObjectMeta: metav1.ObjectMeta{Name: ns + "-fixed"}, Provisioner: "example.com/none"},
		} {
			te.create(sc)
		}
	})

	It("gets a claim that grows, and lets it go with reclaimPolicy Retain", func() {
		const name = "demo-pvc01"
		te.newNode(ns, name, withClass(ns+"-grows"))
		vn := te.waitCondition(ns, name, v1alpha1.ConditionStorageReady, metav1.ConditionFalse, v1alpha1.ReasonStoragePending, nil)
		var pvc corev1.PersistentVolumeClaim
		te.waitObject(ns, name+"-data", &pvc, func(g Gomega) { controlledBy(g, &pvc, vn) })
		te.waitEvent(ns, name, "ClaimCreated")
		var sts appsv1.StatefulSet
		te.waitObject(ns, name, &sts, nil)
		v := volume(sts.Spec.Template.Spec, volumeData)
		Expect(v.PersistentVolumeClaim).NotTo(BeNil(), "data volume %+v", v)
		Expect(v.PersistentVolumeClaim.ClaimName).To(Equal(name + "-data"))
		Expect(sts.Spec.VolumeClaimTemplates).To(BeEmpty())
		bind(name+"-data", "1Gi")
		te.waitCondition(ns, name, v1alpha1.ConditionStorageReady, metav1.ConditionTrue, v1alpha1.ReasonStorageBound, contains("1Gi"))

		te.updateNode(ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Persistence.Size = resource.MustParse("2Gi") })
		te.waitCondition(ns, name, v1alpha1.ConditionStorageReady, metav1.ConditionFalse, v1alpha1.ReasonStorageResizing, contains("from 1Gi to 2Gi"))
		te.get(Default, ns, name+"-data", &pvc)
		Expect(pvc.Spec.Resources.Requests.Storage().String()).To(Equal("2Gi"), "request")
		te.waitEvent(ns, name, "ClaimResizing")
		bind(name+"-data", "2Gi")
		te.waitCondition(ns, name, v1alpha1.ConditionStorageReady, metav1.ConditionTrue, v1alpha1.ReasonStorageBound, contains("2Gi"))
		var after appsv1.StatefulSet
		te.get(Default, ns, name, &after)
		Expect(after.Spec.Template.Annotations[AnnotationTemplateHash]).To(Equal(sts.Spec.Template.Annotations[AnnotationTemplateHash]),
			"growing the claim changed the pod template")

		te.updateNode(ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Persistence.ReclaimPolicy = v1alpha1.ReclaimRetain })
		te.waitObject(ns, name+"-data", &pvc, func(g Gomega) {
			g.Expect(pvc.OwnerReferences).To(BeEmpty(), "owners")
		})
	})

	It("reports a growth its storage class does not allow, and keeps the claim", func() {
		const name = "demo-pvc02"
		te.newNode(ns, name, withClass(ns+"-fixed"))
		var pvc corev1.PersistentVolumeClaim
		te.waitObject(ns, name+"-data", &pvc, nil)
		bind(name+"-data", "1Gi")
		te.waitCondition(ns, name, v1alpha1.ConditionStorageReady, metav1.ConditionTrue, v1alpha1.ReasonStorageBound, nil)
		te.updateNode(ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Persistence.Size = resource.MustParse("5Gi") })
		te.waitCondition(ns, name, v1alpha1.ConditionStorageReady, metav1.ConditionFalse, v1alpha1.ReasonResizeInfeasible,
			contains("does not allow volume expansion", "stays at 1Gi"))
		te.get(Default, ns, name+"-data", &pvc)
		Expect(pvc.Spec.Resources.Requests.Storage().String()).To(Equal("1Gi"), "request, want it unchanged")
	})
})

// The guard: an invalid node is reported and not acted on.
var _ = It("reports an invalid node and does not act on it", func() {
	ns := te.namespace()
	const name = "demo-bad01"
	te.newNode(ns, name, withWorkload(v1alpha1.WorkloadDeployment), withPersistence("1Gi", ""))
	te.waitCondition(ns, name, v1alpha1.ConditionInvalidSpec, metav1.ConditionTrue, v1alpha1.ReasonInvalid, contains("persistence requires workloadType StatefulSet"))
	vn := te.waitCondition(ns, name, v1alpha1.ConditionPodReady, metav1.ConditionUnknown, v1alpha1.ReasonInvalid, nil)
	Expect(vn.Status.Conditions).To(HaveLen(len(ownedConditions)))
	te.absent(ns, name, &corev1.ConfigMap{})
	te.absent(ns, name, &appsv1.Deployment{})
})

// A StatefulSet node whose pod is deleted with no grace period, its server killed first:
// the pod is gone before any kubelet could report the exit, and the controller proves
// the death by the refused connection at the pod's old address.
var _ = Describe("A StatefulSet node whose pod goes with its server", Ordered, func() {
	const name, ip, next = "demo-sts02", "10.200.0.7", "10.200.0.8"
	It("reports ServerDown once the pod's old address refuses connections, until its next pod's server answers", func() {
		ns := te.namespace()
		pod, sts := te.servingStatefulSetNode(ns, name, ip, next)
		te.waitCondition(ns, name, v1alpha1.ConditionServerDown, metav1.ConditionFalse, v1alpha1.ReasonServing, nil)

		te.refused.Store(serverAddr(ip), true)
		Expect(te.c.Delete(context.Background(), pod, client.GracePeriodSeconds(0))).To(Succeed())
		te.waitCondition(ns, name, v1alpha1.ConditionServerDown, metav1.ConditionTrue, v1alpha1.ReasonContainerExited,
			contains("pod "+name+"-0 is gone and its server no longer listens at "+ip+" (connection refused)"))

		By("still down while the next pod has not started its server")
		pending := &corev1.Pod{ObjectMeta: *sts.Spec.Template.ObjectMeta.DeepCopy(), Spec: *sts.Spec.Template.Spec.DeepCopy()}
		pending.Name, pending.Namespace = name+"-0", ns
		pending.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name, UID: "sts-uid", Controller: ptr.To(true)}}
		te.create(pending)
		Consistently(func(g Gomega) {
			var vn v1alpha1.ValkeyNode
			te.get(g, ns, name, &vn)
			g.Expect(conditions.IsTrue(vn.Status.Conditions, v1alpha1.ConditionServerDown)).To(BeTrue())
		}).WithTimeout(2 * time.Second).Should(Succeed())

		By("up again once the next pod's server answers")
		te.setPodStatus(pending, runningStatus(next))
		te.waitCondition(ns, name, v1alpha1.ConditionServerDown, metav1.ConditionFalse, v1alpha1.ReasonServing, nil)
	})
})

// A StatefulSet node whose pod is deleted with no grace period while its server still
// runs: the kubelet stops the server a moment later, when the API has no pod to report
// the exit on. The controller holds a connection to the old address and proves the
// death as soon as that connection ends and the address refuses the next.
var _ = Describe("A StatefulSet node whose pod goes before its server", Ordered, func() {
	const name, ip = "demo-sts03", "10.200.0.9"
	addr := serverAddr(ip)
	It("reports ServerDown once the server's connection ends and its address refuses connections", func() {
		ns := te.namespace()
		pod, _ := te.servingStatefulSetNode(ns, name, ip)
		te.answering.Store(addr, nil)
		Expect(te.c.Delete(context.Background(), pod, client.GracePeriodSeconds(0))).To(Succeed())
		server := te.waitDialled(addr)

		By("not down while the server still answers there")
		Consistently(func(g Gomega) {
			var vn v1alpha1.ValkeyNode
			te.get(g, ns, name, &vn)
			g.Expect(conditions.IsTrue(vn.Status.Conditions, v1alpha1.ConditionServerDown)).To(BeFalse())
		}).WithTimeout(time.Second).Should(Succeed())

		By("down once the server is stopped: its connection ends and the address refuses")
		te.refused.Store(addr, true)
		Expect(server.Close()).To(Succeed())
		te.waitCondition(ns, name, v1alpha1.ConditionServerDown, metav1.ConditionTrue, v1alpha1.ReasonContainerExited,
			contains("pod "+name+"-0 is gone and its server no longer listens at "+ip+" (connection refused)"))
	})
})

// A StatefulSet node whose server dies in its pod, which stays: the controller holds a
// connection to the running server and proves the death the moment that connection ends
// and the address refuses the next, before any kubelet reports the exit; the server's
// next answer ends it.
var _ = Describe("A StatefulSet node whose server dies in its pod", Ordered, func() {
	const name, ip = "demo-sts04", "10.200.0.10"
	addr := serverAddr(ip)
	It("reports ServerDown once its watched connection ends and the address refuses connections", func() {
		ns := te.namespace()
		te.answering.Store(addr, nil)
		_, _ = te.servingStatefulSetNode(ns, name, ip)
		server := te.waitDialled(addr)
		te.waitCondition(ns, name, v1alpha1.ConditionServerDown, metav1.ConditionFalse, v1alpha1.ReasonServing, nil)

		By("down once its connection ends and the address refuses, with the pod still running")
		srv := te.dialer.get(ip)
		te.dialer.drop(ip)
		te.refused.Store(addr, true)
		Expect(server.Close()).To(Succeed())
		te.waitCondition(ns, name, v1alpha1.ConditionServerDown, metav1.ConditionTrue, v1alpha1.ReasonContainerExited,
			contains("the server of pod "+name+"-0 no longer listens at "+ip+" (connection refused)"))

		By("up again once the server answers")
		te.refused.Delete(addr)
		te.dialer.set(ip, srv)
		te.updateNode(ns, name, func(vn *v1alpha1.ValkeyNode) { vn.Labels["poke"] = "1" }) // an event for a pass
		te.waitCondition(ns, name, v1alpha1.ConditionServerDown, metav1.ConditionFalse, v1alpha1.ReasonServing, nil)
	})
})
