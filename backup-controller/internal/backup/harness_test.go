package backup

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/api/validation"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/jobapi"
	"github.com/valkey-operator/valkey-operator/internal/operator"
	"github.com/valkey-operator/valkey-operator/internal/status"
)

// jobsHarness runs the backup and restore reconcilers against envtest in a namespace of
// its own. envtest has no kubelet and no Job controller, so the harness plays them:
// finish gives a Job a pod whose containers terminated with the termination messages a
// Job's program writes, then the Job's terminal status, as Kubernetes would.
type jobsHarness struct {
	c  client.Client
	ns string
}

// newJobsHarness starts the reconcilers for a fresh namespace with a store credentials
// Secret "s3"; the manager stops with the spec's container.
func newJobsHarness() *jobsHarness {
	GinkgoHelper()
	c, err := client.New(suite.Config, client.Options{Scheme: operator.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	h := &jobsHarness{c: c, ns: fmt.Sprintf("bj-%d", time.Now().UnixNano()%1e9)}
	Expect(c.Create(suite.Step(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}})).To(Succeed())
	Expect(c.Create(suite.Step(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "s3"},
		StringData: map[string]string{v1alpha1.DefaultAccessKeyIDKey: "AKIDEXAMPLE", v1alpha1.DefaultSecretAccessKeyKey: "secret-of-the-tenant"}})).To(Succeed())
	mgr, err := ctrl.NewManager(suite.Config, ctrl.Options{
		Scheme: operator.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{h.ns: {}}},
	})
	Expect(err).NotTo(HaveOccurred())
	env := &Env{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder(FieldManager),
		Jobs: JobSettings{Image: "operator:test", DeadlineSeconds: 3600, StorePolicy: harnessPolicy}, StoreRetryDelay: 300 * time.Millisecond}
	Expect((&BackupReconciler{Env: env}).SetupWithManager(mgr, 2)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	Expect((&RestoreReconciler{Env: env}).SetupWithManager(ctx, mgr, 2)).To(Succeed())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	DeferCleanup(func() {
		cancel()
		Expect(<-done).To(Succeed())
	})
	return h
}

// harnessPolicy is the operator's endpoint policy the harness's backup-controller
// passes to its Jobs.
var harnessPolicy = validation.EndpointPolicy{APIServer: []netip.Prefix{netip.MustParsePrefix("10.96.0.1/32")}}

func (h *jobsHarness) store() v1alpha1.ObjectStoreSpec {
	return v1alpha1.ObjectStoreSpec{Prefix: "p", S3: &v1alpha1.S3Spec{Bucket: "backups", Endpoint: "http://store:9000", ForcePathStyle: true,
		Credentials: v1alpha1.S3Credentials{SecretName: "s3"}}}
}

// cluster creates a formed cluster of one shard without replicas, its one member a
// primary serving every slot, with a version and the restore user applied.
func (h *jobsHarness) cluster(name string, mutate func(*v1alpha1.ValkeyCluster)) *v1alpha1.ValkeyCluster {
	GinkgoHelper()
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name},
		Spec: v1alpha1.ValkeyClusterSpec{Shards: 1, ReplicasPerShard: ptr.To[int32](0)}}
	if mutate != nil {
		mutate(vc)
	}
	Expect(h.c.Create(suite.Step(), vc)).To(Succeed())
	now := metav1.Now()
	cond := func(t string) metav1.Condition {
		return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: "Test", LastTransitionTime: now, ObservedGeneration: vc.Generation}
	}
	// Applied under field managers of their own, as the cluster- and acl-controllers do:
	// the restore reconciler may already have applied its Restored condition, and a
	// plain update would then fail on the changed resourceVersion.
	Expect(status.Apply(suite.Step(), h.c, "test-cluster-controller", vc, v1alpha1.GroupVersion.WithKind("ValkeyCluster"), map[string]any{
		"shards":     []v1alpha1.ShardStatus{{Index: 0, Primary: name + "-a", Slots: []string{"0-16383"}}},
		"conditions": []metav1.Condition{cond(v1alpha1.ConditionClusterFormed), cond(v1alpha1.ConditionSlotsAssigned)},
	})).To(Succeed())
	Expect(status.Apply(suite.Step(), h.c, "test-acl-controller", vc, v1alpha1.GroupVersion.WithKind("ValkeyCluster"), map[string]any{
		"acl": &v1alpha1.ACLStatus{SecretName: v1alpha1.ACLSecretName(name), SystemUsersSecretName: v1alpha1.SystemUsersSecretName(name), Revision: "r1"},
	})).To(Succeed())
	vn := &v1alpha1.ValkeyNode{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name + "-a", Labels: v1alpha1.ClusterLabels(name),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(vc, v1alpha1.GroupVersion.WithKind("ValkeyCluster"))}},
		Spec: v1alpha1.ValkeyNodeSpec{ClusterName: name, Revision: 1, WorkloadType: v1alpha1.WorkloadStatefulSet,
			Image: v1alpha1.DefaultImage, ACLSecretName: v1alpha1.ACLSecretName(name), SystemUsersSecretName: v1alpha1.SystemUsersSecretName(name)},
	}
	Expect(h.c.Create(suite.Step(), vn)).To(Succeed())
	vn.Status.PodIP, vn.Status.Role, vn.Status.Lifecycle, vn.Status.Version = "10.0.0.1", v1alpha1.RolePrimary, v1alpha1.LifecycleActive, "8.0.1"
	vn.Status.Conditions = []metav1.Condition{cond(v1alpha1.ConditionPodReady), cond(v1alpha1.ConditionJoined), cond(v1alpha1.ConditionACLApplied)}
	Expect(h.c.Status().Update(suite.Step(), vn)).To(Succeed())
	return vc
}

func (h *jobsHarness) backup(name, cluster string, policy v1alpha1.BackupDeletionPolicy, store v1alpha1.ObjectStoreSpec) {
	GinkgoHelper()
	Expect(h.c.Create(suite.Step(), &v1alpha1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name},
		Spec: v1alpha1.ValkeyBackupSpec{ClusterName: cluster, ObjectStore: store, DeletionPolicy: policy}})).To(Succeed())
}

func (h *jobsHarness) getBackup(g Gomega, name string) *v1alpha1.ValkeyBackup {
	vb := &v1alpha1.ValkeyBackup{}
	g.Expect(h.c.Get(suite.Step(), client.ObjectKey{Namespace: h.ns, Name: name}, vb)).To(Succeed())
	return vb
}

// job waits for the Job name and returns it.
func (h *jobsHarness) job(name string) *batchv1.Job {
	GinkgoHelper()
	j := &batchv1.Job{}
	Eventually(func() error { return h.c.Get(suite.Step(), client.ObjectKey{Namespace: h.ns, Name: name}, j) }).
		Should(Succeed(), "Job %s", name)
	return j
}

// jobNames lists the Jobs with label = value.
func (h *jobsHarness) jobNames(label, value string) []string {
	var list batchv1.JobList
	Expect(h.c.List(suite.Step(), &list, client.InNamespace(h.ns), client.MatchingLabels{label: value})).To(Succeed())
	var out []string
	for _, j := range list.Items {
		if j.DeletionTimestamp.IsZero() {
			out = append(out, j.Name)
		}
	}
	return out
}

// finish ends Job name as Kubernetes would: a pod whose containers terminated with
// these termination messages (by container name), then the Job Complete or Failed.
func (h *jobsHarness) finish(name string, succeeded bool, messages map[string]string) {
	GinkgoHelper()
	j := h.job(name)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name + "-x1", Labels: j.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(j, batchv1.SchemeGroupVersion.WithKind("Job"))}},
		Spec: j.Spec.Template.Spec,
	}
	Expect(h.c.Create(suite.Step(), pod)).To(Succeed())
	now := metav1.Now()
	terminated := func(c corev1.Container) corev1.ContainerStatus {
		code := int32(0)
		if msg, ok := messages[c.Name]; ok && strings.Contains(msg, `"reason"`) {
			code = 1
		}
		return corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: "sha256:0", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: messages[c.Name], StartedAt: now, FinishedAt: now}}}
	}
	pod.Status.Phase = corev1.PodSucceeded
	if !succeeded {
		pod.Status.Phase = corev1.PodFailed
	}
	for _, c := range pod.Spec.InitContainers {
		pod.Status.InitContainerStatuses = append(pod.Status.InitContainerStatuses, terminated(c))
	}
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, terminated(c))
	}
	Expect(h.c.Status().Update(suite.Step(), pod)).To(Succeed())
	j.Status.StartTime = &now
	if succeeded {
		j.Status.Succeeded, j.Status.CompletionTime = 1, &now
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now}}
	} else {
		j.Status.Failed = 1
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now, LastProbeTime: now}}
	}
	Expect(h.c.Status().Update(suite.Step(), j)).To(Succeed())
}

// result is the termination message of r, as a Job's program writes it.
func result(r jobapi.Result) string { return string(r.Encode()) }

// events returns the "Reason Note" of the events in the namespace.
func (h *jobsHarness) events() []string {
	var list eventsv1.EventList
	Expect(h.c.List(suite.Step(), &list, client.InNamespace(h.ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Reason+" "+e.Note)
	}
	return out
}

func (h *jobsHarness) gone(obj client.Object) func() bool {
	return func() bool {
		return apierrors.IsNotFound(h.c.Get(suite.Step(), client.ObjectKeyFromObject(obj), obj))
	}
}

func condition(conds []metav1.Condition, typ string) metav1.Condition {
	for _, c := range conds {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}
