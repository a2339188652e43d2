//go:build e2e

package backup

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const (
	readyTimeout   = 4 * time.Minute
	backupTimeout  = 3 * time.Minute
	restoreTimeout = 4 * time.Minute
)

// A TLS cluster backed up over HTTPS (private CA), restored into the same shard count
// (by ValkeyBackup name, TLS) and into five shards (by object store and path), with
// every key and TTL; the users come only after Restored, Ready only after it too.
func TestBackupAndRestore(t *testing.T) {
	data := dataset{prefix: "bk:", n: 20000}
	f := framework.NewFeature(suite, "backup and restore into 3 and 5 shards").
		Assess("a TLS cluster's backup restores into the same and another shard count", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns := framework.Namespace(ctx)
			s3 := k.DeployS3(ctx, t, ns, true)
			ca := k.CreateValkeyCertSecret(ctx, t, ns, "src-tls", "src")
			src := framework.NewValkeyCluster(ns, "src", 3, 1)
			src.Spec.TLS = &v1alpha1.TLSSpec{Certificate: &v1alpha1.CertificateSpec{SecretName: "src-tls"}}
			if err := k.Client.Create(ctx, src); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, src, readyTimeout)
			data.write(ctx, t, keysClient(ctx, t, k, src, ca))

			b := waitBackup(ctx, t, k, newBackup(ctx, t, k, ns, "full", "src", s3.Store("prod")), v1alpha1.BackupCompleted, backupTimeout)
			if len(b.Status.Shards) != 3 || b.Status.Keys != int64(data.n) || b.Status.ValkeyVersion == "" {
				t.Fatalf("status %+v", b.Status)
			}
			for _, sh := range b.Status.Shards {
				if sh.SourceRole != "replica" || !strings.HasPrefix(sh.Checksum, "sha256:") || len(sh.Slots) == 0 || sh.Size == 0 {
					t.Errorf("shard %+v: want a snapshot of a replica with its checksum and slots", sh)
				}
			}
			objs := strings.Join(s3.Objects(ctx, t, k), " ")
			for _, o := range []string{"manifest.json", "shard-0.rdb", "shard-1.rdb", "shard-2.rdb"} {
				if !strings.Contains(objs, b.Status.Path+"/"+o) {
					t.Errorf("the store lacks %s/%s: %s", b.Status.Path, o, objs)
				}
			}

			caSame := k.CreateValkeyCertSecret(ctx, t, ns, "same-tls", "same")
			same := restoreFrom(ctx, t, k, ns, "same", 3, 1, v1alpha1.DataSource{BackupName: "full"}, func(vc *v1alpha1.ValkeyCluster) {
				vc.Spec.TLS = &v1alpha1.TLSSpec{Certificate: &v1alpha1.CertificateSpec{SecretName: "same-tls"}}
			})
			store := s3.Store("")
			more := restoreFrom(ctx, t, k, ns, "more", 5, 1, v1alpha1.DataSource{ObjectStore: &store, Path: b.Status.Path}, nil)
			waitRestored(ctx, t, k, same, restoreTimeout)
			k.WaitClusterReady(ctx, t, same, readyTimeout)
			data.verify(ctx, t, keysClient(ctx, t, k, same, caSame))
			// Restored is the backup-controller's, as the status contract says.
			k.CheckStatusContract(ctx, t, same)
			waitRestored(ctx, t, k, more, restoreTimeout)
			k.WaitClusterReady(ctx, t, more, readyTimeout)
			data.verify(ctx, t, keysClient(ctx, t, k, more, nil))
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// A schedule creates a backup per tick and keeps the newest two; the deleted ones'
// objects leave the store.
func TestScheduleWithRetention(t *testing.T) {
	f := framework.NewFeature(suite, "schedule with retention").
		Assess("every minute a backup, the two newest kept, the others deleted with their objects", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns := framework.Namespace(ctx)
			s3 := k.DeployS3(ctx, t, ns, false)
			vc := framework.NewValkeyCluster(ns, "sched", 1, 1)
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, readyTimeout)
			dataset{prefix: "s:", n: 1000}.write(ctx, t, keysClient(ctx, t, k, vc, nil))
			sched := &v1alpha1.ValkeyBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "minutely", Namespace: ns},
				Spec: v1alpha1.ValkeyBackupScheduleSpec{ClusterName: "sched", Schedule: "@every 1m", ObjectStore: s3.Store("sched"),
					Retention: v1alpha1.BackupRetention{KeepLast: ptr.To[int32](2)}}}
			if err := k.Client.Create(ctx, sched); err != nil {
				t.Fatal(err)
			}
			created := map[string]bool{}
			err := framework.Until(ctx, 330*time.Second, "4 backups created and retention at work", func(ctx context.Context) (bool, string, error) {
				var list v1alpha1.ValkeyBackupList
				if err := k.Client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelSchedule: "minutely"}); err != nil {
					return false, "", err
				}
				completed := 0
				for _, b := range list.Items {
					created[b.Name] = true
					if b.Status.Phase == v1alpha1.BackupCompleted {
						completed++
					}
				}
				if completed > 2 {
					t.Logf("%d completed backups present for a moment (retention runs after each completes)", completed)
				}
				return len(created) >= 4 && completed == 2, fmt.Sprintf("%d created, %d present, %d completed", len(created), len(list.Items), completed), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := k.Client.Get(ctx, client.ObjectKeyFromObject(sched), sched); err != nil {
				t.Fatal(err)
			}
			if sched.Status.LastCompletedBackup == "" || sched.Status.NextScheduleTime == nil {
				t.Errorf("schedule status %+v", sched.Status)
			}
			// The deleted backups' objects are gone: at most the kept ones' (and one
			// running) manifests remain.
			if err := framework.Until(ctx, 60*time.Second, "the deleted backups' objects gone", func(ctx context.Context) (bool, string, error) {
				m := manifests(ctx, t, k, s3)
				return len(m) <= 3, strings.Join(m, " "), nil
			}); err != nil {
				t.Fatal(err)
			}
			cleanupSchedule(ctx, t, k, ns, sched)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// cleanupSchedule deletes a schedule and its backups while the store still runs (their
// finalizers delete their objects).
func cleanupSchedule(ctx context.Context, t *testing.T, k *framework.Cluster, ns string, sched *v1alpha1.ValkeyBackupSchedule) {
	t.Helper()
	if err := k.Client.Delete(ctx, sched); err != nil {
		t.Fatal(err)
	}
	if err := k.Client.DeleteAllOf(ctx, &v1alpha1.ValkeyBackup{}, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := framework.WaitForList(ctx, k.Client, &v1alpha1.ValkeyBackupList{}, 90*time.Second, "every backup deleted",
		func(l *v1alpha1.ValkeyBackupList) (bool, string) {
			return len(l.Items) == 0, fmt.Sprintf("%d left", len(l.Items))
		},
		client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
}

// The store refuses the credentials or does not answer, or its name resolves to an
// address the endpoint policy refuses: the backup fails with the reason and writes no
// manifest; a schedule tries again on its next tick and succeeds once the credentials
// are fixed.
func TestStoreFailures(t *testing.T) {
	f := framework.NewFeature(suite, "store unreachable or credentials refused").
		Assess("Failed with the reason, no manifest, retried by the schedule", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns := framework.Namespace(ctx)
			s3 := k.DeployS3(ctx, t, ns, false)
			vc := framework.NewValkeyCluster(ns, "vk", 1, 1)
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, readyTimeout)
			wrong := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "wrong-creds", Namespace: ns},
				StringData: map[string]string{v1alpha1.DefaultAccessKeyIDKey: framework.S3AccessKey, v1alpha1.DefaultSecretAccessKeyKey: "not-the-secret"}}
			if err := k.Client.Create(ctx, wrong); err != nil {
				t.Fatal(err)
			}
			denied := s3.Store("denied")
			denied.S3.Credentials.SecretName = "wrong-creds"
			b := waitBackup(ctx, t, k, newBackup(ctx, t, k, ns, "denied", "vk", denied), v1alpha1.BackupFailed, backupTimeout)
			if c := failedReason(b); c != v1alpha1.ReasonAccessDenied {
				t.Errorf("Failed reason %s, want AccessDenied", c)
			}
			gone := s3.Store("gone")
			gone.S3.Endpoint = "http://no-such-store." + ns + ".svc:7070"
			b = waitBackup(ctx, t, k, newBackup(ctx, t, k, ns, "unreachable", "vk", gone), v1alpha1.BackupFailed, backupTimeout)
			if c := failedReason(b); c != v1alpha1.ReasonStoreUnreachable {
				t.Errorf("Failed reason %s, want ObjectStoreUnreachable", c)
			}
			// A name admission cannot tell from a store's, resolving to the API server's
			// Service address: the probe Job refuses to connect to what it resolved to.
			alias := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "api-alias", Namespace: ns},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "kubernetes.default.svc.cluster.local"}}
			if err := k.Client.Create(ctx, alias); err != nil {
				t.Fatal(err)
			}
			toAPI := s3.Store("api")
			toAPI.S3.Endpoint = "http://api-alias." + ns + ".svc:443"
			b = waitBackup(ctx, t, k, newBackup(ctx, t, k, ns, "api-alias", "vk", toAPI), v1alpha1.BackupFailed, backupTimeout)
			if c, msg := failedReason(b), failedMessage(b); c != v1alpha1.ReasonEndpointRefused ||
				!strings.HasPrefix(msg, `spec.objectStore.s3.endpoint "`+toAPI.S3.Endpoint+`": connect to `) ||
				!strings.Contains(msg, "the Kubernetes API server's address") {
				t.Errorf("Failed %s: %s; want EndpointRefused naming the field and the API server's address", c, msg)
			}
			if m := manifests(ctx, t, k, s3); len(m) != 0 {
				t.Fatalf("manifests of failed backups: %v", m)
			}

			sched := &v1alpha1.ValkeyBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "retry", Namespace: ns},
				Spec: v1alpha1.ValkeyBackupScheduleSpec{ClusterName: "vk", Schedule: "@every 1m", ObjectStore: denied}}
			if err := k.Client.Create(ctx, sched); err != nil {
				t.Fatal(err)
			}
			countFailed := func() (failed, completed int) {
				var list v1alpha1.ValkeyBackupList
				if err := k.Client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelSchedule: "retry"}); err != nil {
					t.Fatal(err)
				}
				for _, b := range list.Items {
					switch b.Status.Phase {
					case v1alpha1.BackupFailed:
						failed++
					case v1alpha1.BackupCompleted:
						completed++
					}
				}
				return failed, completed
			}
			if err := framework.Until(ctx, 180*time.Second, "two failed scheduled backups", func(context.Context) (bool, string, error) {
				f, _ := countFailed()
				return f >= 2, fmt.Sprintf("%d failed", f), nil
			}); err != nil {
				t.Fatal(err)
			}
			// Fix the credentials: the next tick completes.
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				var s corev1.Secret
				if err := k.Client.Get(ctx, client.ObjectKeyFromObject(wrong), &s); err != nil {
					return err
				}
				s.Data[v1alpha1.DefaultSecretAccessKeyKey] = []byte(framework.S3SecretKey)
				return k.Client.Update(ctx, &s)
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := framework.Until(ctx, 150*time.Second, "a scheduled backup completes after the fix", func(context.Context) (bool, string, error) {
				f, c := countFailed()
				return c >= 1, fmt.Sprintf("%d failed, %d completed", f, c), nil
			}); err != nil {
				t.Fatal(err)
			}
			cleanupSchedule(ctx, t, k, ns, sched)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func failedMessage(b *v1alpha1.ValkeyBackup) string {
	for _, c := range b.Status.Conditions {
		if c.Type == v1alpha1.ConditionFailed {
			return c.Message
		}
	}
	return ""
}

func failedReason(b *v1alpha1.ValkeyBackup) string {
	for _, c := range b.Status.Conditions {
		if c.Type == v1alpha1.ConditionFailed {
			return c.Reason
		}
	}
	return ""
}

// The replica a shard's transfer reads goes away as it starts (its pod deleted, as a
// roll retiring it would): the backup moves to another replica and completes; never a
// partial backup marked complete (the restore has every key).
func TestSourceLost(t *testing.T) {
	data := dataset{prefix: "l:", n: 20000}
	f := framework.NewFeature(suite, "source replica lost during the backup").
		Assess("the backup moves to another replica and restores whole", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns := framework.Namespace(ctx)
			s3 := k.DeployS3(ctx, t, ns, false)
			vc := framework.NewValkeyCluster(ns, "lost", 1, 2)
			// Each key takes 200 µs to save: a snapshot of 20k keys lasts about 4 s, so
			// the source can be taken away in the middle of it.
			vc.Spec.Config = v1alpha1.Config{"rdb-key-save-delay": "200"}
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, readyTimeout)
			data.write(ctx, t, keysClient(ctx, t, k, vc, nil))
			b := newBackup(ctx, t, k, ns, "b", "lost", s3.Store(""))
			var source, jobName string
			if err := framework.Until(ctx, 60*time.Second, "the first transfer's Job", func(ctx context.Context) (bool, string, error) {
				// The backup's other Jobs (the store probe first) read no member.
				for _, j := range jobsOf(ctx, t, k, b) {
					if s := j.Annotations["valkey.io/source"]; s != "" {
						source, jobName = s, j.Name
					}
				}
				return source != "", "", nil
			}); err != nil {
				t.Fatal(err)
			}
			// The transfer runs: its container started a moment ago.
			if err := framework.WaitForList(ctx, k.Client, &corev1.PodList{}, 60*time.Second, "the Job's pod to run",
				func(l *corev1.PodList) (bool, string) {
					return len(l.Items) > 0 && l.Items[0].Status.Phase == corev1.PodRunning, fmt.Sprintf("%d pods", len(l.Items))
				}, client.InNamespace(ns), client.MatchingLabels{"batch.kubernetes.io/job-name": jobName}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1500 * time.Millisecond)
			var vn v1alpha1.ValkeyNode
			if err := k.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: source}, &vn); err != nil {
				t.Fatal(err)
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: vn.Status.PodName}}
			if err := k.Client.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
				t.Fatal(err)
			}
			t.Logf("deleted pod %s of the source %s", pod.Name, source)
			b = waitBackup(ctx, t, k, b, v1alpha1.BackupCompleted, backupTimeout)
			sh := b.Status.Shards[0]
			t.Logf("shard 0: %d attempts, taken from %s (%s)", sh.Attempts, sh.Source, sh.SourceRole)
			if sh.Attempts < 2 || sh.Source == source {
				t.Errorf("shard 0 was taken in %d attempts from %s, want a new attempt on another member than %s", sh.Attempts, sh.Source, source)
			}
			r := restoreFrom(ctx, t, k, ns, "back", 1, 0, v1alpha1.DataSource{BackupName: "b"}, nil)
			waitRestored(ctx, t, k, r, restoreTimeout)
			k.WaitClusterReady(ctx, t, r, readyTimeout)
			data.verify(ctx, t, keysClient(ctx, t, k, r, nil))
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// A cluster without replicas is backed up from its primaries, with a warning; a corrupt
// object fails the restore (ChecksumMismatch) and a missing backup leaves it NotFound,
// never Ready, its users never loaded.
func TestZeroReplicasAndBadBackups(t *testing.T) {
	data := dataset{prefix: "z:", n: 6000}
	f := framework.NewFeature(suite, "zero replicas, corrupt and missing backups").
		Assess("primaries with a warning; restore verified; corrupt and missing backups refused", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns := framework.Namespace(ctx)
			s3 := k.DeployS3(ctx, t, ns, false)
			vc := framework.NewValkeyCluster(ns, "bare", 3, 0)
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, readyTimeout)
			data.write(ctx, t, keysClient(ctx, t, k, vc, nil))
			b := waitBackup(ctx, t, k, newBackup(ctx, t, k, ns, "b", "bare", s3.Store("")), v1alpha1.BackupCompleted, backupTimeout)
			for _, sh := range b.Status.Shards {
				if sh.SourceRole != "primary" {
					t.Errorf("shard %d taken from a %s", sh.Index, sh.SourceRole)
				}
			}
			// One Warning per shard; the events API may fold them into one series.
			if evs := k.Events(ctx, t, ns, "BackupFromPrimary"); len(evs) == 0 {
				t.Error("no BackupFromPrimary warning")
			}
			r := restoreFrom(ctx, t, k, ns, "two", 2, 0, v1alpha1.DataSource{BackupName: "b"}, nil)
			waitRestored(ctx, t, k, r, restoreTimeout)
			k.WaitClusterReady(ctx, t, r, readyTimeout)
			data.verify(ctx, t, keysClient(ctx, t, k, r, nil))

			s3.Corrupt(ctx, t, k, b.Status.Path+"/shard-1.rdb")
			bad := restoreFrom(ctx, t, k, ns, "corrupt", 1, 0, v1alpha1.DataSource{BackupName: "b"}, nil)
			waitRestoreFails(ctx, t, k, bad, v1alpha1.ReasonChecksumMismatch, restoreTimeout)

			store := s3.Store("")
			missing := restoreFrom(ctx, t, k, ns, "missing", 1, 0, v1alpha1.DataSource{ObjectStore: &store, Path: "no/such/backup"}, nil)
			waitRestoreFails(ctx, t, k, missing, v1alpha1.ReasonNotFound, restoreTimeout)
			// A Job looks for the missing manifest again 30 s after the last one ended; the
			// ones before the last go, so at most two such Jobs exist.
			if err := framework.Until(ctx, 150*time.Second, "a third look for the missing manifest", func(ctx context.Context) (bool, string, error) {
				var list batchv1.JobList
				if err := k.Client.List(ctx, &list, client.InNamespace(ns),
					client.MatchingLabels{v1alpha1.LabelRestore: "missing", v1alpha1.LabelComponent: "restore-manifest"}); err != nil {
					return false, "", err
				}
				var names []string
				for _, j := range list.Items {
					if j.DeletionTimestamp == nil {
						names = append(names, j.Name)
					}
				}
				if len(names) > 2 {
					t.Fatalf("manifest Jobs %v: more than two", names)
				}
				return slices.Contains(names, "missing-restore-manifest-3"), strings.Join(names, " "), nil
			}); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// Writers keep writing during the backup: each shard's snapshot is one point in time,
// so for every writer (one sequence per hash tag, each write acknowledged before the
// next) the restored keys are exactly a prefix of its sequence, with no hole.
func TestConsistentUnderWrites(t *testing.T) {
	f := framework.NewFeature(suite, "backup under writes restores a per-shard point in time").
		Assess("each writer's restored sequence has no hole", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns := framework.Namespace(ctx)
			s3 := k.DeployS3(ctx, t, ns, false)
			vc := framework.NewValkeyCluster(ns, "busy", 3, 1)
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, readyTimeout)
			dataset{prefix: "pad:", n: 30000}.write(ctx, t, keysClient(ctx, t, k, vc, nil))
			c := keysClient(ctx, t, k, vc, nil)
			tags := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}
			var written [9]atomic.Int64
			wctx, stop := context.WithCancel(ctx)
			var wg sync.WaitGroup
			for i, tag := range tags {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := int64(0); wctx.Err() == nil; n++ {
						if err := c.Do(wctx, c.B().Set().Key(seqKey(tag, n)).Value("1").Build()).Error(); err != nil {
							if wctx.Err() == nil {
								t.Errorf("writer %s: %v", tag, err)
							}
							return
						}
						written[i].Store(n + 1)
					}
				}()
			}
			time.Sleep(2 * time.Second)
			b := waitBackup(ctx, t, k, newBackup(ctx, t, k, ns, "b", "busy", s3.Store("")), v1alpha1.BackupCompleted, backupTimeout)
			time.Sleep(time.Second)
			stop()
			wg.Wait()
			r := restoreFrom(ctx, t, k, ns, "point", 3, 0, v1alpha1.DataSource{BackupName: b.Name}, nil)
			waitRestored(ctx, t, k, r, restoreTimeout)
			k.WaitClusterReady(ctx, t, r, readyTimeout)
			rc := keysClient(ctx, t, k, r, nil)
			for i, tag := range tags {
				n := written[i].Load()
				cmds := make(rueidis.Commands, 0, n)
				for j := int64(0); j < n; j++ {
					cmds = append(cmds, rc.B().Exists().Key(seqKey(tag, j)).Build())
				}
				present := make([]bool, n)
				for j, res := range rc.DoMulti(ctx, cmds...) {
					v, err := res.AsInt64()
					if err != nil {
						t.Fatal(err)
					}
					present[j] = v == 1
				}
				prefix := int64(0)
				for prefix < n && present[prefix] {
					prefix++
				}
				for j := prefix; j < n; j++ {
					if present[j] {
						t.Errorf("writer %s: key %d restored but %d missing: not a point in time", tag, j, prefix)
						break
					}
				}
				if prefix == 0 {
					t.Errorf("writer %s: nothing restored of %d writes", tag, n)
				}
				t.Logf("writer %s: %d of %d writes in the backup, no hole", tag, prefix, n)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func seqKey(tag string, n int64) string { return "{" + tag + "}:seq:" + strconv.FormatInt(n, 10) }

// Restores across versions follow the RDB format, not the version number: a snapshot
// that Valkey 9.1 sends over replication to a client that announces no version is in
// format 11, which 8.0 loads, so it restores; a backup in format 80 (what 9.x writes to
// disk; here its manifest says so) is refused by a cluster of 8.0 before any Job runs,
// with both versions in the reason.
func TestNewerBackupRefused(t *testing.T) {
	data := dataset{prefix: "n:", n: 1000}
	f := framework.NewFeature(suite, "backup of a newer Valkey").
		Assess("9.1 format 11 restores into 8.0; format 80 is refused: VersionTooNew", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns := framework.Namespace(ctx)
			s3 := k.DeployS3(ctx, t, ns, false)
			img, err := k.ValkeyImage(9, 1)
			if err != nil {
				t.Fatal(err)
			}
			vc := framework.NewValkeyCluster(ns, "new", 1, 0)
			vc.Spec.Image = img.Ref
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, readyTimeout)
			data.write(ctx, t, keysClient(ctx, t, k, vc, nil))
			b := waitBackup(ctx, t, k, newBackup(ctx, t, k, ns, "b", "new", s3.Store("")), v1alpha1.BackupCompleted, backupTimeout)
			sh := b.Status.Shards[0]
			t.Logf("Valkey %s sent RDB format %d", sh.ValkeyVersion, sh.RDBVersion)
			store := s3.Store("")
			if sh.RDBVersion <= 11 {
				old := restoreFrom(ctx, t, k, ns, "old", 1, 0, v1alpha1.DataSource{ObjectStore: &store, Path: b.Status.Path}, nil)
				waitRestored(ctx, t, k, old, restoreTimeout)
				k.WaitClusterReady(ctx, t, old, readyTimeout)
				data.verify(ctx, t, keysClient(ctx, t, k, old, nil))
				s3.Edit(ctx, t, k, b.Status.Path+"/manifest.json", `s/"rdbVersion": 11/"rdbVersion": 80/`)
			}
			refused := restoreFrom(ctx, t, k, ns, "refused", 1, 0, v1alpha1.DataSource{ObjectStore: &store, Path: b.Status.Path}, nil)
			waitRestoreFails(ctx, t, k, refused, v1alpha1.ReasonVersionTooNew, restoreTimeout)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
