//go:build e2e

package backup

import (
	"context"
	"crypto/x509"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// dataset is what a test writes: n keys bk:<i>, every third with a TTL of an hour.
type dataset struct {
	prefix string
	n      int
}

func (d dataset) key(i int) string   { return d.prefix + strconv.Itoa(i) }
func (d dataset) value(i int) string { return fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", 60)) }
func (d dataset) hasTTL(i int) bool  { return i%3 == 0 }

// keysClient is a cluster client of vc as the test user (over TLS with caPEM).
func keysClient(ctx context.Context, t testing.TB, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, caPEM []byte) rueidis.Client {
	t.Helper()
	o := rueidis.ClientOption{InitAddress: k.MemberAddrs(ctx, t, vc), Username: framework.TestUser, Password: "any", DisableCache: true}
	if caPEM != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		o.TLSConfig = valkey.VerifyChainOnly(pool)
	}
	c, err := rueidis.NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func (d dataset) write(ctx context.Context, t testing.TB, c rueidis.Client) {
	t.Helper()
	const batch = 2000
	for start := 0; start < d.n; start += batch {
		cmds := make(rueidis.Commands, 0, batch)
		for i := start; i < min(d.n, start+batch); i++ {
			b := c.B().Set().Key(d.key(i)).Value(d.value(i))
			if d.hasTTL(i) {
				cmds = append(cmds, b.Px(time.Hour).Build())
			} else {
				cmds = append(cmds, b.Build())
			}
		}
		for _, r := range c.DoMulti(ctx, cmds...) {
			if err := r.Error(); err != nil {
				t.Fatalf("write: %v", err)
			}
		}
	}
}

// verify reads every key back with its TTL.
func (d dataset) verify(ctx context.Context, t testing.TB, c rueidis.Client) {
	t.Helper()
	const batch = 2000
	bad := 0
	for start := 0; start < d.n; start += batch {
		cmds := make(rueidis.Commands, 0, 2*batch)
		for i := start; i < min(d.n, start+batch); i++ {
			cmds = append(cmds, c.B().Get().Key(d.key(i)).Build(), c.B().Pttl().Key(d.key(i)).Build())
		}
		res := c.DoMulti(ctx, cmds...)
		for j := 0; j < len(res); j += 2 {
			i := start + j/2
			v, err := res[j].ToString()
			ttl, _ := res[j+1].AsInt64()
			okTTL := ttl == -1
			if d.hasTTL(i) {
				okTTL = ttl > int64(50*time.Minute/time.Millisecond) && ttl <= int64(time.Hour/time.Millisecond)
			}
			if err != nil || v != d.value(i) || !okTTL {
				if bad < 5 {
					t.Errorf("%s = %q (%v), TTL %d ms", d.key(i), v, err, ttl)
				}
				bad++
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d keys missing, wrong or with a wrong TTL", bad, d.n)
	}
	t.Logf("all %d keys and their TTLs verified", d.n)
}

// newBackup creates a ValkeyBackup of cluster into store.
func newBackup(ctx context.Context, t testing.TB, k *framework.Cluster, ns, name, cluster string, store v1alpha1.ObjectStoreSpec) *v1alpha1.ValkeyBackup {
	t.Helper()
	b := &v1alpha1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.ValkeyBackupSpec{ClusterName: cluster, ObjectStore: store}}
	if err := k.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// backupPhase is a WaitFor condition on a backup's phase.
func backupPhase(want v1alpha1.BackupPhase) func(*v1alpha1.ValkeyBackup) (bool, string) {
	return func(b *v1alpha1.ValkeyBackup) (bool, string) {
		c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionCompleted)
		f := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionFailed)
		detail := fmt.Sprintf("phase %q", b.Status.Phase)
		if c != nil && f != nil {
			detail += fmt.Sprintf("; Completed=%s %s: %s; Failed=%s %s: %s", c.Status, c.Reason, c.Message, f.Status, f.Reason, f.Message)
		}
		return b.Status.Phase == want, detail
	}
}

// waitBackup waits for a backup to end in phase want and returns it.
func waitBackup(ctx context.Context, t testing.TB, k *framework.Cluster, b *v1alpha1.ValkeyBackup, want v1alpha1.BackupPhase, timeout time.Duration) *v1alpha1.ValkeyBackup {
	t.Helper()
	start := time.Now()
	err := framework.WaitFor(ctx, k.Client, b, timeout, "backup "+b.Name+" "+string(want), func(b *v1alpha1.ValkeyBackup) (bool, string) {
		ok, d := backupPhase(want)(b)
		if !ok && (b.Status.Phase == v1alpha1.BackupCompleted || b.Status.Phase == v1alpha1.BackupFailed) {
			t.Fatalf("backup %s ended %s, want %s: %s", b.Name, b.Status.Phase, want, d)
		}
		return ok, d
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("backup %s %s after %s: %d shards, %d keys, %d bytes, path %s", b.Name, b.Status.Phase, time.Since(start).Round(100*time.Millisecond),
		len(b.Status.Shards), b.Status.Keys, b.Status.Size, b.Status.Path)
	return b
}

// restoreFrom creates a cluster with a data source.
func restoreFrom(ctx context.Context, t testing.TB, k *framework.Cluster, ns, name string, shards, replicas int32, ds v1alpha1.DataSource, mutate func(*v1alpha1.ValkeyCluster)) *v1alpha1.ValkeyCluster {
	t.Helper()
	vc := framework.NewValkeyCluster(ns, name, shards, replicas)
	vc.Spec.DataSource = &ds
	if mutate != nil {
		mutate(vc)
	}
	if err := k.Client.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	return vc
}

// waitRestored waits for Restored=True, checking meanwhile that the cluster is never
// Ready and that the test user is not in its aclfile before it.
func waitRestored(ctx context.Context, t testing.TB, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, timeout time.Duration) {
	t.Helper()
	start := time.Now()
	err := framework.WaitFor(ctx, k.Client, vc, timeout, "Restored=True", func(vc *v1alpha1.ValkeyCluster) (bool, string) {
		restored := meta.IsStatusConditionTrue(vc.Status.Conditions, v1alpha1.ConditionRestored)
		if c := meta.FindStatusCondition(vc.Status.Conditions, v1alpha1.ConditionRestored); c != nil && c.Status == metav1.ConditionFalse {
			switch c.Reason {
			case v1alpha1.ReasonChecksumMismatch, v1alpha1.ReasonVersionTooNew, v1alpha1.ReasonRestoreFailed, v1alpha1.ReasonNotAtCreation:
				t.Fatalf("the restore failed: %s: %s", c.Reason, c.Message)
			}
		}
		if !restored {
			if meta.IsStatusConditionTrue(vc.Status.Conditions, v1alpha1.ConditionReady) {
				t.Fatalf("the cluster is Ready before Restored=True")
			}
			if aclHasUser(ctx, k, vc, framework.TestUser) {
				t.Fatalf("user %s is in the aclfile before Restored=True", framework.TestUser)
			}
		}
		return framework.ConditionIs(v1alpha1.ConditionRestored, metav1.ConditionTrue, "")(vc)
	})
	if err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(vc.Status.Conditions, v1alpha1.ConditionRestored)
	t.Logf("restored %s after apply: %s", time.Since(start).Round(100*time.Millisecond), c.Message)
}

func aclHasUser(ctx context.Context, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, user string) bool {
	var s corev1.Secret
	if err := k.Client.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: v1alpha1.ACLSecretName(vc.Name)}, &s); err != nil {
		return false
	}
	return strings.Contains(string(s.Data[v1alpha1.ACLFileKey]), "user "+user+" ")
}

// waitRestoreFails waits for Restored=False with reason, and checks the cluster stays
// not Ready.
func waitRestoreFails(ctx context.Context, t testing.TB, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, reason string, timeout time.Duration) {
	t.Helper()
	if err := framework.WaitFor(ctx, k.Client, vc, timeout, "Restored=False "+reason,
		framework.ConditionIs(v1alpha1.ConditionRestored, metav1.ConditionFalse, reason)); err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(vc.Status.Conditions, v1alpha1.ConditionRestored)
	t.Logf("Restored=False %s: %s", c.Reason, c.Message)
	// The cluster forms but is never reported Ready, and its users stay out.
	time.Sleep(5 * time.Second)
	if err := k.Client.Get(ctx, client.ObjectKeyFromObject(vc), vc); err != nil {
		t.Fatal(err)
	}
	if r := meta.FindStatusCondition(vc.Status.Conditions, v1alpha1.ConditionReady); r == nil || r.Status == metav1.ConditionTrue {
		t.Fatalf("Ready = %+v after a failed restore", r)
	}
	if aclHasUser(ctx, k, vc, framework.TestUser) {
		t.Fatal("the users were loaded after a failed restore")
	}
}

// jobsOf lists a backup's Jobs.
func jobsOf(ctx context.Context, t testing.TB, k *framework.Cluster, b *v1alpha1.ValkeyBackup) []batchv1.Job {
	t.Helper()
	var list batchv1.JobList
	if err := k.Client.List(ctx, &list, client.InNamespace(b.Namespace), client.MatchingLabels{v1alpha1.LabelBackup: b.Name}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// manifests lists the manifest objects in the store.
func manifests(ctx context.Context, t testing.TB, k *framework.Cluster, s3 *framework.S3) []string {
	var out []string
	for _, o := range s3.Objects(ctx, t, k) {
		if strings.HasSuffix(o, "/manifest.json") {
			out = append(out, o)
		}
	}
	return out
}
