//go:build bench

package bench

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/e2e/perf"
)

// backupKeys is how many keys of about 100 bytes the backed-up 3x1 cluster holds
// (BENCH_BACKUP_KEYS, default 1,000,000); every third has a TTL of two hours.
func backupKeys() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_BACKUP_KEYS")); err == nil && n > 0 {
		return n
	}
	return 1000000
}

// backupRun is one repetition of item 8.
type backupRun struct {
	Keys          int     `json:"keys"`
	Backup        float64 `json:"backup_seconds"`
	Bytes         int64   `json:"bytes"`
	MBps          float64 `json:"mb_per_second"`
	IdleP99       float64 `json:"idle_p99_seconds"`
	IdleGap       float64 `json:"idle_longest_gap_seconds"`
	BackupP99     float64 `json:"backup_p99_seconds"`
	BackupGap     float64 `json:"backup_longest_gap_seconds"`
	Restore3      float64 `json:"restore_3_seconds"`
	Restore3Apply float64 `json:"restore_3_apply_to_ready_seconds"`
	Restore5      float64 `json:"restore_5_seconds"`
	Restore5Apply float64 `json:"restore_5_apply_to_ready_seconds"`
	Wrong         int     `json:"keys_wrong_after_restore"`
}

// benchBackup is item 8: a 3x1 cluster with 1M keys backed up to the S3 server of the
// local Kubernetes while writers measure their latency, then restored into 3 and into 5
// shards, every key and TTL checked.
func benchBackup(ctx context.Context, t *testing.T, k *framework.Cluster, ns string) {
	img, _ := image(t, k, 8, 0)
	s3 := k.DeployS3(ctx, t, ns, false)
	n := backupKeys()
	vc, start := createCluster(ctx, t, k, ns, "bsrc", 3, 1, img)
	waitReady(ctx, t, k, vc, start, 4*time.Minute)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: k.MemberAddrs(ctx, t, vc), Username: framework.TestUser, Password: "any", DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	loadStart := time.Now()
	writeBackupKeys(ctx, t, c, n)
	t.Logf("loaded %d keys in %s", n, time.Since(loadStart).Round(time.Second))
	var runs []backupRun
	for rep := 1; rep <= reps; rep++ {
		runs = append(runs, backupOnce(ctx, t, k, ns, vc, s3, img, n, rep))
	}
	results.Detail("backup", runs)
	col := func(f func(backupRun) float64) perf.Stat {
		var v []float64
		for _, r := range runs {
			v = append(v, f(r))
		}
		return perf.Summarize(v)
	}
	backup := col(func(r backupRun) float64 { return r.Backup })
	idle := col(func(r backupRun) float64 { return 1000 * r.IdleP99 })
	idleGap := col(func(r backupRun) float64 { return 1000 * r.IdleGap })
	p99 := col(func(r backupRun) float64 { return 1000 * r.BackupP99 })
	gap := col(func(r backupRun) float64 { return 1000 * r.BackupGap })
	r3 := col(func(r backupRun) float64 { return r.Restore3 })
	r5 := col(func(r backupRun) float64 { return r.Restore5 })
	wrong := col(func(r backupRun) float64 { return float64(r.Wrong) })
	label := fmt.Sprintf("%dk keys", n/1000)
	ratio := func(a, b perf.Stat) perf.Stat {
		if b.Median == 0 {
			return perf.Stat{}
		}
		return perf.One(a.Median / b.Median)
	}
	within := func(v, goal float64, what string) string {
		if v <= goal {
			return "meets the goal"
		}
		return fmt.Sprintf("MISSES the goal (%s)", what)
	}
	results.Add(
		perf.Row{Key: "backup_duration", Item: "8", Name: "backup of 3x1 with " + label + ": apply → Completed", Unit: perf.UnitSeconds, Stat: backup},
		perf.Row{Key: "backup_rate", Item: "8", Name: "backup: MB/s (snapshot bytes, LZF-compressed, / duration)", Unit: "MB/s", Stat: col(func(r backupRun) float64 { return r.MBps })},
		perf.Row{Key: "backup_keys_rate", Item: "8", Name: "backup: keys/s", Unit: "keys/s", Stat: col(func(r backupRun) float64 { return float64(r.Keys) / r.Backup })},
		perf.Row{Key: "backup_idle_p99", Item: "8", Name: "writers' p99 latency, idle", Unit: "ms", Stat: idle},
		perf.Row{Key: "backup_idle_gap", Item: "8", Name: "writers' longest gap, idle", Unit: "ms", Stat: idleGap},
		perf.Row{Key: "backup_p99", Item: "8", Name: "writers' p99 latency during the backup", Unit: "ms", Stat: p99,
			Goal: "≤ 2× idle", Note: within(p99.Median, 2*idle.Median, "2× idle")},
		perf.Row{Key: "backup_gap", Item: "8", Name: "writers' longest gap during the backup", Unit: "ms", Stat: gap,
			Goal: "≤ 50 ms", Note: within(gap.Median, 50, "50 ms")},
		perf.Row{Key: "restore3_duration", Item: "8", Name: "restore into 3 shards: first restore Job → Restored", Unit: perf.UnitSeconds, Stat: r3},
		perf.Row{Key: "restore3_apply", Item: "8", Name: "restore into 3 shards: apply → Ready", Unit: perf.UnitSeconds, Stat: col(func(r backupRun) float64 { return r.Restore3Apply })},
		perf.Row{Key: "restore3_ratio", Item: "8", Name: "restore into 3 shards / backup (ratio of medians)", Unit: perf.UnitRatio, Stat: ratio(r3, backup),
			Goal: "≤ 2×", Note: within(ratio(r3, backup).Median, 2, "2× the backup")},
		perf.Row{Key: "restore5_duration", Item: "8", Name: "restore into 5 shards: first restore Job → Restored", Unit: perf.UnitSeconds, Stat: r5},
		perf.Row{Key: "restore5_apply", Item: "8", Name: "restore into 5 shards: apply → Ready", Unit: perf.UnitSeconds, Stat: col(func(r backupRun) float64 { return r.Restore5Apply })},
		perf.Row{Key: "restore5_ratio", Item: "8", Name: "restore into 5 shards / backup (ratio of medians)", Unit: perf.UnitRatio, Stat: ratio(r5, backup),
			Goal: "≤ 2×", Note: within(ratio(r5, backup).Median, 2, "2× the backup")},
		perf.Row{Key: "restore_wrong", Item: "8", Name: "keys missing or with a wrong value or TTL after each restore", Unit: perf.UnitCount, Stat: wrong, Goal: "0",
			Note: map[bool]string{true: "KEYS WRONG", false: "every key and TTL checked"}[wrong.Max > 0]},
	)
	deleteCluster(ctx, t, k, vc)
}

func backupOnce(ctx context.Context, t *testing.T, k *framework.Cluster, ns string, vc *v1alpha1.ValkeyCluster, s3 *framework.S3, img string, n, rep int) backupRun {
	run := backupRun{Keys: n}
	idle := startLatencyWriters(ctx, t, k, vc)
	time.Sleep(10 * time.Second)
	run.IdleP99, run.IdleGap = idle.stop()

	lw := startLatencyWriters(ctx, t, k, vc)
	b := &v1alpha1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%d", rep), Namespace: ns},
		Spec: v1alpha1.ValkeyBackupSpec{ClusterName: vc.Name, ObjectStore: s3.Store("bench"), DeletionPolicy: v1alpha1.BackupDelete}}
	start := time.Now()
	if err := k.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := framework.WaitFor(ctx, k.Client, b, 20*time.Minute, "backup Completed", func(b *v1alpha1.ValkeyBackup) (bool, string) {
		if b.Status.Phase == v1alpha1.BackupFailed {
			t.Fatalf("backup failed: %+v", b.Status.Conditions)
		}
		return b.Status.Phase == v1alpha1.BackupCompleted, string(b.Status.Phase)
	}); err != nil {
		t.Fatal(err)
	}
	run.Backup = time.Since(start).Seconds()
	run.BackupP99, run.BackupGap = lw.stop()
	run.Bytes = b.Status.Size
	run.MBps = float64(b.Status.Size) / 1e6 / run.Backup
	t.Logf("backup %s: %.1fs, %d bytes (%.1f MB/s), %d keys; writers p99 idle %.4fs, during %.4fs, longest gap %.3fs",
		b.Name, run.Backup, run.Bytes, run.MBps, b.Status.Keys, run.IdleP99, run.BackupP99, run.BackupGap)

	for _, shards := range []int32{3, 5} {
		r := framework.NewValkeyCluster(ns, fmt.Sprintf("r%d-%d", shards, rep), shards, 1)
		r.Spec.Image = img
		r.Spec.DataSource = &v1alpha1.DataSource{BackupName: b.Name}
		applied := time.Now()
		if err := k.Client.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		if err := framework.WaitFor(ctx, k.Client, r, 30*time.Minute, "Restored", framework.ConditionIs(v1alpha1.ConditionRestored, metav1.ConditionTrue, "")); err != nil {
			t.Fatal(err)
		}
		restored := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionRestored).LastTransitionTime.Time
		jobsStart := firstRestoreJob(ctx, t, k, r)
		d := restored.Sub(jobsStart).Seconds()
		ready, _ := waitReady(ctx, t, k, r, applied, 5*time.Minute)
		wrong := verifyBackupKeys(ctx, t, k, r, n)
		t.Logf("restore into %d shards: %.1fs from the first Job to Restored, %.1fs apply → Ready, %d keys wrong", shards, d, ready.Seconds(), wrong)
		if shards == 3 {
			run.Restore3, run.Restore3Apply = d, ready.Seconds()
		} else {
			run.Restore5, run.Restore5Apply = d, ready.Seconds()
		}
		run.Wrong += wrong
		deleteCluster(ctx, t, k, r)
	}
	if err := k.Client.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	return run
}

// firstRestoreJob is when the first restore Job of a cluster was created.
func firstRestoreJob(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) time.Time {
	var first time.Time
	for i := int32(0); i < 10; i++ {
		var j batchJob
		if err := k.Client.Get(ctx, objKey(vc.Namespace, fmt.Sprintf("%s-restore-%d", vc.Name, i)), &j); err != nil {
			break
		}
		if first.IsZero() || j.CreationTimestamp.Time.Before(first) {
			first = j.CreationTimestamp.Time
		}
	}
	if first.IsZero() {
		t.Fatal("no restore Job found")
	}
	return first
}

func benchValue(i int) string { return fmt.Sprintf("%08d-%s", i, strings.Repeat("v", 92)) }

// writeBackupKeys writes bk:<i> (about 100 bytes each) in pipelined batches.
func writeBackupKeys(ctx context.Context, t *testing.T, c rueidis.Client, n int) {
	const batch = 5000
	for start := 0; start < n; start += batch {
		cmds := make(rueidis.Commands, 0, batch)
		for i := start; i < min(n, start+batch); i++ {
			b := c.B().Set().Key("bk:" + strconv.Itoa(i)).Value(benchValue(i))
			if i%3 == 0 {
				cmds = append(cmds, b.Px(2*time.Hour).Build())
			} else {
				cmds = append(cmds, b.Build())
			}
		}
		for _, r := range c.DoMulti(ctx, cmds...) {
			if err := r.Error(); err != nil {
				t.Fatalf("load: %v", err)
			}
		}
	}
}

// verifyBackupKeys counts the keys missing, wrong, or with a wrong TTL in vc.
func verifyBackupKeys(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, n int) int {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: k.MemberAddrs(ctx, t, vc), Username: framework.TestUser, Password: "any", DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wrong := 0
	const batch = 5000
	for start := 0; start < n; start += batch {
		cmds := make(rueidis.Commands, 0, 2*batch)
		for i := start; i < min(n, start+batch); i++ {
			key := "bk:" + strconv.Itoa(i)
			cmds = append(cmds, c.B().Get().Key(key).Build(), c.B().Pttl().Key(key).Build())
		}
		res := c.DoMulti(ctx, cmds...)
		for j := 0; j < len(res); j += 2 {
			i := start + j/2
			v, err := res[j].ToString()
			ttl, _ := res[j+1].AsInt64()
			okTTL := ttl == -1
			if i%3 == 0 {
				okTTL = ttl > int64(time.Hour/time.Millisecond) && ttl <= int64(2*time.Hour/time.Millisecond)
			}
			if err != nil || v != benchValue(i) || !okTTL {
				wrong++
			}
		}
	}
	return wrong
}

// latencyWriters write to every shard, one write at a time per writer, and keep every
// write's latency and each writer's longest time between two successful writes.
type latencyWriters struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	lat    []time.Duration
	gap    time.Duration
	client rueidis.Client
}

func startLatencyWriters(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) *latencyWriters {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: k.MemberAddrs(ctx, t, vc), Username: framework.TestUser, Password: "any", DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &latencyWriters{cancel: cancel, client: c}
	// Nine hash tags spread over the three shards' slots.
	for _, tag := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"} {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			last := time.Now()
			var local []time.Duration
			var gap time.Duration
			for i := 0; wctx.Err() == nil; i++ {
				s := time.Now()
				err := c.Do(wctx, c.B().Set().Key("{"+tag+"}:lat:"+strconv.Itoa(i%1000)).Value("x").Build()).Error()
				now := time.Now()
				if err == nil {
					local = append(local, now.Sub(s))
					gap = max(gap, now.Sub(last))
					last = now
				}
				time.Sleep(2 * time.Millisecond)
			}
			w.mu.Lock()
			w.lat = append(w.lat, local...)
			w.gap = max(w.gap, gap)
			w.mu.Unlock()
		}()
	}
	return w
}

// stop returns the p99 latency and the longest gap in seconds.
func (w *latencyWriters) stop() (p99, gap float64) {
	w.cancel()
	w.wg.Wait()
	w.client.Close()
	if len(w.lat) == 0 {
		return 0, 0
	}
	sort.Slice(w.lat, func(i, j int) bool { return w.lat[i] < w.lat[j] })
	return w.lat[len(w.lat)*99/100].Seconds(), w.gap.Seconds()
}

type batchJob = batchv1.Job

func objKey(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
