package backup

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/api/validation"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/operator"
	"github.com/valkey-operator/valkey-operator/internal/status"
	"github.com/valkey-operator/valkey-operator/internal/testsuite"
)

// A schedule of a paused cluster: the backup that comes due is deferred (no ValkeyBackup,
// Scheduled=False Paused, a Deferred event) and created by itself once the cluster is
// resumed, through the watch on the cluster's Paused condition.
var _ = Describe("The schedule of a paused cluster", Ordered, func() {
	var (
		c  client.Client
		ns string
	)
	backups := func() []string {
		var list v1alpha1.ValkeyBackupList
		Expect(c.List(suite.Step(), &list, client.InNamespace(ns))).To(Succeed())
		var out []string
		for _, b := range list.Items {
			out = append(out, b.Name)
		}
		return out
	}
	scheduled := func() *metav1.Condition {
		var vs v1alpha1.ValkeyBackupSchedule
		Expect(c.Get(suite.Step(), client.ObjectKey{Namespace: ns, Name: "nightly"}, &vs)).To(Succeed())
		return conditions.Get(vs.Status.Conditions, v1alpha1.ConditionScheduled)
	}
	setPaused := func(paused bool) {
		st, reason := metav1.ConditionFalse, v1alpha1.ReasonNotPaused
		if paused {
			st, reason = metav1.ConditionTrue, v1alpha1.ReasonPaused
		}
		vc := &v1alpha1.ValkeyCluster{}
		Expect(c.Get(suite.Step(), client.ObjectKey{Namespace: ns, Name: "vk"}, vc)).To(Succeed())
		owned := struct {
			Conditions []metav1.Condition `json:"conditions"`
		}{[]metav1.Condition{{Type: v1alpha1.ConditionPaused, Status: st, Reason: reason, Message: "set by the test",
			ObservedGeneration: vc.Generation, LastTransitionTime: metav1.Now()}}}
		Expect(status.Apply(suite.Step(), c, "cluster-controller", vc, v1alpha1.GroupVersion.WithKind("ValkeyCluster"), owned)).To(Succeed())
	}
	BeforeAll(func() {
		// A backup every 6 s keeps the spec short; the operator's policy allows one
		// every 5 minutes at most unless the administrator lowers it (to 1 minute).
		prev := validation.CurrentPolicy()
		validation.SetPolicy(validation.Policy{MinBackupInterval: time.Second})
		DeferCleanup(validation.SetPolicy, prev)
		var err error
		c, err = client.New(suite.Config, client.Options{Scheme: operator.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		ns = fmt.Sprintf("bk-%d", time.Now().UnixNano()%1e9)
		Expect(c.Create(suite.Step(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Expect(c.Create(suite.Step(), &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vk"}})).To(Succeed())
		setPaused(true)
		mgr, err := testsuite.Manager(suite.Config, ns)
		Expect(err).NotTo(HaveOccurred())
		env := &Env{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder(FieldManager)}
		Expect((&ScheduleReconciler{Env: env}).SetupWithManager(mgr, 1)).To(Succeed())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		DeferCleanup(func() {
			cancel()
			Expect(<-done).To(Succeed())
		})
		Expect(c.Create(suite.Step(), &v1alpha1.ValkeyBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
			Spec: v1alpha1.ValkeyBackupScheduleSpec{ClusterName: "vk", Schedule: "@every 6s", ObjectStore: v1alpha1.ObjectStoreSpec{
				S3: &v1alpha1.S3Spec{Bucket: "backups", Credentials: v1alpha1.S3Credentials{SecretName: "s3"}}}}})).To(Succeed())
	})

	It("defers the backup that comes due while paused", func() {
		Eventually(func(g Gomega) {
			cond := scheduled()
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(v1alpha1.ReasonPaused))
			g.Expect(cond.Message).To(ContainSubstring("cluster vk is paused: the backup due at"))
		}).Should(Succeed(), "Scheduled=False Paused naming the deferred backup")
		Eventually(func() []string {
			var list eventsv1.EventList
			Expect(c.List(suite.Step(), &list, client.InNamespace(ns))).To(Succeed())
			var out []string
			for _, e := range list.Items {
				out = append(out, e.Reason+" "+e.Note)
			}
			return out
		}).Should(ContainElement(HavePrefix("Deferred cluster vk is paused")), "a Deferred event on the schedule")
		Consistently(backups).WithTimeout(5*time.Second).Should(BeEmpty(), "a backup was created while paused")
	})

	It("takes the deferred backup at the resume", func() {
		setPaused(false)
		Eventually(backups).WithTimeout(3*time.Second).ShouldNot(BeEmpty(), "the deferred backup, at the resume")
		Eventually(func() string { return scheduled().Reason }).Should(Equal(v1alpha1.ReasonScheduleValid))
	})
})
