package backup

import (
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/jobapi"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/layout"
)

var digest = strings.Repeat("5e", 32)

// A backup's store traffic runs in Jobs of its namespace: a probe first, the shard's
// Job, the manifest written from a ConfigMap by a Job (tried again when it fails), and
// at deletion a Job that deletes the objects while the finalizer holds the backup.
var _ = Describe("A backup's store Jobs", Ordered, func() {
	var h *jobsHarness
	BeforeAll(func() {
		h = newJobsHarness()
		h.cluster("vk", nil)
	})

	// completeShards runs the probe and the shard's Job of backup name to success.
	completeShards := func(name string) {
		GinkgoHelper()
		h.finish(probeJobName(name), true, map[string]string{containerStore: result(jobapi.Result{})})
		h.finish(backupJobName(name, 0, 1), true, map[string]string{containerBackup: result(jobapi.Result{
			Object: "shard-0.rdb", Size: 100, SHA256: digest, Keys: 7, RDBVersion: 11, ValkeyVersion: "8.0.1", Role: "primary"})})
	}

	It("checks the store with a probe Job before a server is asked for a snapshot", func() {
		h.backup("b1", "vk", v1alpha1.BackupDelete, h.store())
		probe := h.job(probeJobName("b1"))
		pod := probe.Spec.Template.Spec
		Expect(pod.Containers).To(HaveLen(1))
		Expect(pod.Containers[0].Args).To(ContainElements("store-probe", "--prefix=p", "--bucket=backups", "--endpoint=http://store:9000", "--path-style",
			"--kubernetes-api-addresses=10.96.0.1"), "the Job gets the operator's endpoint policy")
		for _, e := range pod.Containers[0].Env {
			Expect(e.ValueFrom.SecretKeyRef.Name).To(Equal("s3"), "env %s comes from the tenant's Secret", e.Name)
		}
		Expect(pod.Volumes).To(BeEmpty(), "a probe mounts nothing: no password, no CA")
		Expect(*pod.AutomountServiceAccountToken).To(BeFalse())
		Expect(*probe.Spec.ActiveDeadlineSeconds).To(Equal(int64(DefaultStoreDeadline.Seconds())))
		Expect(metav1.IsControlledBy(probe, h.getBackup(Default, "b1"))).To(BeTrue())
		Eventually(func(g Gomega) {
			c := condition(h.getBackup(g, "b1").Status.Conditions, v1alpha1.ConditionCompleted)
			g.Expect(c.Message).To(HavePrefix("checking the object store (Job b1-probe)"))
		}).Should(Succeed())
		Consistently(func() []string { return h.jobNames(v1alpha1.LabelBackup, "b1") }).WithTimeout(time.Second).
			Should(Equal([]string{"b1-probe"}), "a shard's Job started before the probe passed")
	})

	It("writes the manifest through a Job, from a ConfigMap, and tries a failed write again", func() {
		completeShards("b1")
		var path string
		Eventually(func(g Gomega) {
			vb := h.getBackup(g, "b1")
			g.Expect(vb.Status.Shards).To(HaveLen(1))
			g.Expect(vb.Status.Shards[0].Phase).To(Equal(v1alpha1.BackupCompleted))
			path = vb.Status.Path
		}).Should(Succeed())
		w := h.job(manifestJobName("b1", 1))
		Expect(w.Spec.Template.Spec.Containers[0].Args).To(ContainElements("manifest-write", "--dir="+path, "--manifest-file=/var/run/valkey/manifest/manifest.json"))
		cm := &corev1.ConfigMap{}
		Expect(h.c.Get(suite.Step(), client.ObjectKey{Namespace: h.ns, Name: manifestConfigMapName(h.getBackup(Default, "b1"))}, cm)).To(Succeed())
		Expect(cm.Name).To(MatchRegexp("^b1-manifest-[0-9a-f]{8}$"))
		Expect(*cm.Immutable).To(BeTrue())
		Expect(metav1.IsControlledBy(cm, h.getBackup(Default, "b1"))).To(BeTrue())
		m, err := layout.DecodeManifest([]byte(cm.Data["manifest.json"]))
		Expect(err).NotTo(HaveOccurred())
		Expect(m.Shards).To(ConsistOf(HaveField("SHA256", digest)))
		Expect(m.Shards[0].Size).To(Equal(int64(100)))
		Expect(h.getBackup(Default, "b1").Status.Phase).To(Equal(v1alpha1.BackupRunning), "Completed before the manifest is in the store")

		h.finish(w.Name, false, map[string]string{containerStore: result(jobapi.Result{Reason: jobapi.ReasonStoreUnreachable, Message: "dial tcp: i/o timeout"})})
		h.job(manifestJobName("b1", 2))
		Eventually(h.events).Should(ContainElement(ContainSubstring("Retrying writing the manifest failed (ObjectStoreUnreachable: dial tcp: i/o timeout)")))
		h.finish(manifestJobName("b1", 2), true, map[string]string{containerStore: result(jobapi.Result{Object: path + "/manifest.json", Size: 300})})
		Eventually(func(g Gomega) {
			vb := h.getBackup(g, "b1")
			g.Expect(vb.Status.Phase).To(Equal(v1alpha1.BackupCompleted))
			g.Expect(vb.Status.Keys).To(Equal(int64(7)))
			g.Expect(vb.Status.Size).To(Equal(int64(100)))
			g.Expect(condition(vb.Status.Conditions, v1alpha1.ConditionCompleted).Status).To(Equal(metav1.ConditionTrue))
		}).Should(Succeed())
	})

	It("holds the finalizer while the deletion Job runs, tries again, and lets go once the objects are deleted", func() {
		vb := h.getBackup(Default, "b1")
		path := vb.Status.Path
		Expect(h.c.Delete(suite.Step(), vb)).To(Succeed())
		d := h.job(deleteJobName("b1", 1))
		Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElements("store-delete", "--dir="+path))
		Consistently(h.gone(vb)).WithTimeout(time.Second).Should(BeFalse(), "the backup went while its objects were being deleted")
		h.finish(d.Name, false, map[string]string{containerStore: result(jobapi.Result{Reason: jobapi.ReasonAccessDenied, Message: "403"})})
		h.job(deleteJobName("b1", 2))
		Expect(h.gone(vb)()).To(BeFalse())
		h.finish(deleteJobName("b1", 2), true, map[string]string{containerStore: result(jobapi.Result{Objects: 2})})
		Eventually(h.gone(vb)).Should(BeTrue())
		Expect(h.events()).To(ContainElements(
			"DeleteFailed deleting the objects of "+path+" failed (AccessDenied: 403); attempt 2 of 5",
			"Deleted the 2 objects of "+path+" were deleted"))
	})

	It("lets a backup go after the last deletion attempt failed, saying the objects stay", func() {
		h.backup("b2", "vk", v1alpha1.BackupDelete, h.store())
		completeShards("b2")
		h.finish(manifestJobName("b2", 1), true, map[string]string{containerStore: result(jobapi.Result{})})
		Eventually(func(g Gomega) { g.Expect(h.getBackup(g, "b2").Status.Phase).To(Equal(v1alpha1.BackupCompleted)) }).Should(Succeed())
		vb := h.getBackup(Default, "b2")
		Expect(h.c.Delete(suite.Step(), vb)).To(Succeed())
		for n := 1; n <= MaxDeleteAttempts; n++ {
			h.finish(deleteJobName("b2", n), false, map[string]string{containerStore: result(jobapi.Result{Reason: jobapi.ReasonStoreUnreachable, Message: "no route to host"})})
		}
		Eventually(h.gone(vb)).Should(BeTrue())
		Expect(h.events()).To(ContainElement("ObjectsLeft deleting the objects of " + vb.Status.Path +
			" failed 5 times (ObjectStoreUnreachable: no route to host): they stay in the store"))
		Expect(h.jobNames(v1alpha1.LabelBackup, "b2")).NotTo(ContainElement(deleteJobName("b2", MaxDeleteAttempts+1)))
	})

	It("fails a backup whose store refuses the credentials, with the probe's message cut short", func() {
		h.backup("b3", "vk", v1alpha1.BackupRetain, h.store())
		// A termination message as long as Kubernetes keeps, with a newline: whatever a
		// pod leaves, the condition gets a short line.
		long := `{"reason":"AccessDenied","message":"SignatureDoesNotMatch:\n` + strings.Repeat("x", 3000) + `"}`
		h.finish(probeJobName("b3"), false, map[string]string{containerStore: long})
		Eventually(func(g Gomega) {
			vb := h.getBackup(g, "b3")
			g.Expect(vb.Status.Phase).To(Equal(v1alpha1.BackupFailed))
			c := condition(vb.Status.Conditions, v1alpha1.ConditionFailed)
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonAccessDenied))
			g.Expect(c.Message).To(HavePrefix("the object store refused or did not answer: SignatureDoesNotMatch: xxx"))
			g.Expect(len(c.Message)).To(BeNumerically("<=", len("the object store refused or did not answer: ")+jobapi.MaxMessage))
		}).Should(Succeed())
		Expect(h.jobNames(v1alpha1.LabelBackup, "b3")).To(Equal([]string{"b3-probe"}))
	})

	// What a Job reports when the store's name resolved to the metadata address.
	refused := map[string]string{containerStore: result(jobapi.Result{Reason: jobapi.ReasonEndpointRefused,
		Message: "connect to store:9000 (resolved to 169.254.169.254:9000): link-local address (169.254.0.0/16) refused by the operator's object-store endpoint policy"})}
	refusedMessage := `spec.objectStore.s3.endpoint "http://store:9000": connect to store:9000 (resolved to 169.254.169.254:9000): ` +
		"link-local address (169.254.0.0/16) refused by the operator's object-store endpoint policy"

	It("fails a backup at once when the endpoint policy refused the store's address, naming the field and the address", func() {
		h.backup("b5", "vk", v1alpha1.BackupRetain, h.store())
		h.finish(probeJobName("b5"), false, refused)
		Eventually(func(g Gomega) {
			vb := h.getBackup(g, "b5")
			g.Expect(vb.Status.Phase).To(Equal(v1alpha1.BackupFailed))
			c := condition(vb.Status.Conditions, v1alpha1.ConditionFailed)
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonEndpointRefused))
			g.Expect(c.Message).To(Equal(refusedMessage))
		}).Should(Succeed())
		Eventually(h.events).Should(ContainElement("Failed " + refusedMessage))
		Consistently(func() []string { return h.jobNames(v1alpha1.LabelBackup, "b5") }).WithTimeout(time.Second).
			Should(Equal([]string{"b5-probe"}), "a refused store got another Job")
	})

	It("tries neither a manifest write nor a deletion again once the endpoint policy refused it", func() {
		h.backup("b6", "vk", v1alpha1.BackupDelete, h.store())
		completeShards("b6")
		h.finish(manifestJobName("b6", 1), false, refused)
		Eventually(func(g Gomega) {
			c := condition(h.getBackup(g, "b6").Status.Conditions, v1alpha1.ConditionFailed)
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonEndpointRefused))
			g.Expect(c.Message).To(HavePrefix(`spec.objectStore.s3.endpoint "http://store:9000": the snapshots are in the store, but the manifest could not be written (1 attempts): connect to store:9000`))
		}).Should(Succeed())
		vb := h.getBackup(Default, "b6")
		Expect(h.jobNames(v1alpha1.LabelBackup, "b6")).NotTo(ContainElement(manifestJobName("b6", 2)))
		Expect(h.c.Delete(suite.Step(), vb)).To(Succeed())
		h.finish(deleteJobName("b6", 1), false, refused)
		Eventually(h.gone(vb)).Should(BeTrue())
		Expect(h.events()).To(ContainElement("ObjectsLeft the objects of " + vb.Status.Path + " cannot be deleted: " + refusedMessage + ": they stay in the store"))
		Expect(h.jobNames(v1alpha1.LabelBackup, "b6")).NotTo(ContainElement(deleteJobName("b6", 2)))
	})

	It("fails at once when the credentials Secret is missing, without a Job", func() {
		store := h.store()
		store.S3.Credentials.SecretName = "nope"
		h.backup("b4", "vk", v1alpha1.BackupRetain, store)
		Eventually(func(g Gomega) {
			c := condition(h.getBackup(g, "b4").Status.Conditions, v1alpha1.ConditionFailed)
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonCredentialsMissed))
			g.Expect(c.Message).To(Equal("the Secret nope does not exist"))
		}).Should(Succeed())
		Expect(h.jobNames(v1alpha1.LabelBackup, "b4")).To(BeEmpty())
	})
})

// A restore reads its data source's manifest in a Job, which reports only a summary:
// a missing manifest is looked for again (at most two such Jobs at a time), and each
// restore Job reads its shard's entry itself.
var _ = Describe("A restore's manifest Job", Ordered, func() {
	var h *jobsHarness
	BeforeAll(func() { h = newJobsHarness() })

	source := func(vc *v1alpha1.ValkeyCluster) {
		store := h.store()
		store.Prefix = ""
		vc.Spec.DataSource = &v1alpha1.DataSource{Path: "p/ns/vk/b-0123abcd", ObjectStore: &store}
	}
	restored := func(g Gomega, name string) metav1.Condition {
		vc := &v1alpha1.ValkeyCluster{}
		g.Expect(h.c.Get(suite.Step(), client.ObjectKey{Namespace: h.ns, Name: name}, vc)).To(Succeed())
		return condition(vc.Status.Conditions, v1alpha1.ConditionRestored)
	}
	manifestJobs := func(cluster string) []string {
		var out []string
		for _, n := range h.jobNames(v1alpha1.LabelRestore, cluster) {
			if strings.Contains(n, "-restore-manifest-") {
				out = append(out, n)
			}
		}
		return out
	}

	It("looks for a missing manifest again, keeping at most two Jobs, then restores every shard it names", func() {
		vc := h.cluster("rs", source)
		read := h.job(readManifestJobName("rs", 1))
		Expect(metav1.IsControlledBy(read, vc)).To(BeTrue())
		Expect(read.Spec.Template.Spec.Containers[0].Args).To(ContainElements("manifest-read", "--dir=p/ns/vk/b-0123abcd"))
		notFound := map[string]string{containerStore: result(jobapi.Result{Reason: jobapi.ReasonNotFound, Message: "NoSuchKey: The specified key does not exist."})}
		h.finish(read.Name, false, notFound)
		Eventually(func(g Gomega) {
			c := restored(g, "rs")
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonNotFound))
			g.Expect(c.Message).To(Equal("no complete backup at p/ns/vk/b-0123abcd (its manifest is missing): NoSuchKey: The specified key does not exist."))
		}).Should(Succeed())
		h.finish(readManifestJobName("rs", 2), false, notFound)
		h.job(readManifestJobName("rs", 3))
		Eventually(func() []string { return manifestJobs("rs") }).Should(ConsistOf("rs-restore-manifest-2", "rs-restore-manifest-3"))
		Consistently(func(g Gomega) { g.Expect(restored(g, "rs").Reason).To(Equal(v1alpha1.ReasonNotFound)) }).
			WithTimeout(time.Second).Should(Succeed(), "the condition flaps while the next attempt runs")

		h.finish(readManifestJobName("rs", 3), true, map[string]string{containerStore: result(jobapi.Result{
			Manifest: &layout.Summary{Shards: 2, Keys: 30, Size: 3 << 20, MaxObjectSize: 2 << 20, RDBVersion: 11, ValkeyVersion: "8.0.1"}})})
		for i := range int32(2) {
			j := h.job(restoreJobName("rs", i))
			fetch := j.Spec.Template.Spec.InitContainers[0]
			Expect(fetch.Args).To(ContainElements("restore-fetch", "--dir=p/ns/vk/b-0123abcd", "--shard="+strconv.Itoa(int(i)), "--shards=2"))
			Expect(j.Spec.Template.Spec.InitContainers[1].Resources.Requests.Memory().Value()).To(Equal(int64(64 << 20)))
			h.finish(j.Name, true, map[string]string{containerFetch: result(jobapi.Result{}), containerLoad: result(jobapi.Result{Restored: 15})})
		}
		Eventually(func(g Gomega) {
			c := restored(g, "rs")
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Message).To(HavePrefix("30 keys of p/ns/vk/b-0123abcd (2 shards) restored into 1 shards"))
		}).Should(Succeed())
	})

	It("refuses a backup in a newer RDB format before any restore Job", func() {
		h.cluster("rn", source)
		h.finish(readManifestJobName("rn", 1), true, map[string]string{containerStore: result(jobapi.Result{
			Manifest: &layout.Summary{Shards: 3, Keys: 3, RDBVersion: 80, RDBShard: 2, ValkeyVersion: "9.1.2"}})})
		Eventually(func(g Gomega) {
			c := restored(g, "rn")
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonVersionTooNew))
			g.Expect(c.Message).To(HavePrefix("shard 2 was taken by Valkey 9.1.2 (RDB format 80); this cluster runs Valkey 8.0.1"))
		}).Should(Succeed())
		Expect(h.jobNames(v1alpha1.LabelRestore, "rn")).To(Equal([]string{"rn-restore-manifest-1"}))
	})

	It("reports a data source whose address the endpoint policy refused, naming the field, and looks again later", func() {
		h.cluster("re", source)
		h.finish(readManifestJobName("re", 1), false, map[string]string{containerStore: result(jobapi.Result{Reason: jobapi.ReasonEndpointRefused,
			Message: "connect to store:9000 (resolved to 10.96.0.1:9000): the Kubernetes API server's address (10.96.0.1) refused by the operator's object-store endpoint policy"})})
		Eventually(func(g Gomega) {
			c := restored(g, "re")
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonEndpointRefused))
			g.Expect(c.Message).To(Equal(`spec.dataSource.objectStore.s3.endpoint "http://store:9000": cannot read the manifest of p/ns/vk/b-0123abcd: ` +
				"connect to store:9000 (resolved to 10.96.0.1:9000): the Kubernetes API server's address (10.96.0.1) refused by the operator's object-store endpoint policy"))
		}).Should(Succeed())
		// Tried again after the store retry delay, as an unreachable store is: one Job at a time.
		h.job(readManifestJobName("re", 2))
	})

	It("takes an unreadable manifest as final", func() {
		h.cluster("rc", source)
		h.finish(readManifestJobName("rc", 1), false, map[string]string{containerStore: result(jobapi.Result{
			Reason: jobapi.ReasonChecksumMismatch, Message: "backup object corrupt: the manifest has more than 1048576 bytes"})})
		Eventually(func(g Gomega) {
			c := restored(g, "rc")
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonChecksumMismatch))
			g.Expect(c.Message).To(ContainSubstring("more than 1048576 bytes"))
		}).Should(Succeed())
		Consistently(func() []string { return manifestJobs("rc") }).WithTimeout(time.Second).Should(Equal([]string{"rc-restore-manifest-1"}))
	})
})
