package backup

import (
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/api/validation"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/jobapi"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/layout"
)

func member(name string, shard int32, role v1alpha1.Role, synced bool, mutate ...func(*v1alpha1.ValkeyNode)) v1alpha1.ValkeyNode {
	vn := v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	vn.Spec.ShardIndex = shard
	vn.Status.Role, vn.Status.PodIP, vn.Status.Lifecycle = role, "10.0.0."+name[len(name)-1:], v1alpha1.LifecycleActive
	cond := func(t string, ok bool) metav1.Condition {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		return metav1.Condition{Type: t, Status: s}
	}
	vn.Status.Conditions = []metav1.Condition{cond(v1alpha1.ConditionPodReady, true), cond(v1alpha1.ConditionJoined, true), cond(v1alpha1.ConditionSynced, synced)}
	for _, m := range mutate {
		m(&vn)
	}
	return vn
}

func TestChooseSource(t *testing.T) {
	leaving := func(vn *v1alpha1.ValkeyNode) { vn.Status.Lifecycle = v1alpha1.LifecycleLeaving }
	cases := []struct {
		name        string
		nodes       []v1alpha1.ValkeyNode
		replicas    int32
		exclude     []string
		want        string
		fromPrimary bool
		ok          bool
	}{
		{name: "a replica in sync", replicas: 1, want: "r1", ok: true,
			nodes: []v1alpha1.ValkeyNode{member("p0", 0, v1alpha1.RolePrimary, true), member("r1", 0, v1alpha1.RoleReplica, true)}},
		{name: "replicas sorted by name", replicas: 2, want: "a2", ok: true,
			nodes: []v1alpha1.ValkeyNode{member("p0", 0, v1alpha1.RolePrimary, true), member("r1", 0, v1alpha1.RoleReplica, true), member("a2", 0, v1alpha1.RoleReplica, true)}},
		{name: "a replica behind is not used, nor the primary while replicas are expected", replicas: 1,
			nodes: []v1alpha1.ValkeyNode{member("p0", 0, v1alpha1.RolePrimary, true), member("r1", 0, v1alpha1.RoleReplica, false)}},
		{name: "a leaving replica is not used", replicas: 1,
			nodes: []v1alpha1.ValkeyNode{member("p0", 0, v1alpha1.RolePrimary, true), member("r1", 0, v1alpha1.RoleReplica, true, leaving)}},
		{name: "a replica that failed an attempt is skipped", replicas: 2, exclude: []string{"r1"}, want: "r2", ok: true,
			nodes: []v1alpha1.ValkeyNode{member("p0", 0, v1alpha1.RolePrimary, true), member("r1", 0, v1alpha1.RoleReplica, true), member("r2", 0, v1alpha1.RoleReplica, true)}},
		{name: "no replica in the spec: the primary", replicas: 0, want: "p0", fromPrimary: true, ok: true,
			nodes: []v1alpha1.ValkeyNode{member("p0", 0, v1alpha1.RolePrimary, true)}},
		{name: "other shards do not count", replicas: 1,
			nodes: []v1alpha1.ValkeyNode{member("p0", 0, v1alpha1.RolePrimary, true), member("r1", 1, v1alpha1.RoleReplica, true)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ex := map[string]bool{}
			for _, e := range c.exclude {
				ex[e] = true
			}
			src, fromPrimary, ok := chooseSource(c.nodes, 0, c.replicas, ex)
			if ok != c.ok || src.node != c.want || fromPrimary != c.fromPrimary {
				t.Errorf("got %q primary=%v ok=%v, want %q primary=%v ok=%v", src.node, fromPrimary, ok, c.want, c.fromPrimary, c.ok)
			}
		})
	}
}

func TestDecideShard(t *testing.T) {
	okResult := jobapi.Result{SHA256: "ab", Size: 10}
	lost := jobapi.Result{Reason: jobapi.ReasonSourceLost, Message: "link broke"}
	denied := jobapi.Result{Reason: jobapi.ReasonAccessDenied, Message: "403"}
	cases := []struct {
		name     string
		attempts []attempt
		action   shardAction
		next     int
		reason   string
		exclude  string
	}{
		{name: "nothing yet: start attempt 1", action: actStart, next: 1},
		{name: "running: wait", attempts: []attempt{{n: 1, node: "r1", state: jobRunning}}, action: actWait},
		{name: "succeeded with a result: done", attempts: []attempt{{n: 1, state: jobSucceeded, result: okResult, hasResult: true}}, action: actDone},
		{name: "succeeded without a result: retried", attempts: []attempt{{n: 1, node: "r1", state: jobSucceeded}},
			action: actStart, next: 2, reason: v1alpha1.ReasonTransferFailed},
		{name: "source lost: another member", attempts: []attempt{{n: 1, node: "r1", state: jobFailed, result: lost, hasResult: true}},
			action: actStart, next: 2, reason: v1alpha1.ReasonSourceLost, exclude: "r1"},
		{name: "source lost three times: failed", action: actFail, reason: v1alpha1.ReasonSourceLost, attempts: []attempt{
			{n: 3, node: "r3", state: jobFailed, result: lost, hasResult: true},
			{n: 1, node: "r1", state: jobFailed, result: lost, hasResult: true},
			{n: 2, node: "r2", state: jobFailed, result: lost, hasResult: true}}},
		{name: "access denied: failed at once", attempts: []attempt{{n: 1, state: jobFailed, result: denied, hasResult: true}},
			action: actFail, reason: v1alpha1.ReasonAccessDenied},
		{name: "endpoint refused by the policy: failed at once",
			attempts: []attempt{{n: 1, state: jobFailed, result: jobapi.Result{Reason: jobapi.ReasonEndpointRefused}, hasResult: true}},
			action:   actFail, reason: v1alpha1.ReasonEndpointRefused},
		{name: "deadline: failed", attempts: []attempt{{n: 1, state: jobFailed, failReason: v1alpha1.ReasonDeadlineExceeded}},
			action: actFail, reason: v1alpha1.ReasonDeadlineExceeded},
		{name: "pod gone without a result: retried", attempts: []attempt{{n: 1, node: "r1", state: jobFailed, failReason: v1alpha1.ReasonTransferFailed}},
			action: actStart, next: 2, reason: v1alpha1.ReasonTransferFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := decideShard(c.attempts)
			if d.action != c.action || d.next != c.next || d.reason != c.reason {
				t.Errorf("got action %d next %d reason %q, want %d %d %q", d.action, d.next, d.reason, c.action, c.next, c.reason)
			}
			if c.exclude != "" && !d.exclude[c.exclude] {
				t.Errorf("%s not excluded: %v", c.exclude, d.exclude)
			}
		})
	}
}

func TestNextTick(t *testing.T) {
	hourly, _ := validation.ParseSchedule("0 * * * *")
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name       string
		since, now time.Time
		gate       gate
		create     string
		skipped    bool
		next       string
	}{
		{name: "not due", since: t0, now: t0.Add(30 * time.Minute), next: "11:00"},
		{name: "due", since: t0, now: t0.Add(61 * time.Minute), create: "11:00", next: "12:00"},
		{name: "missed ticks: only the newest", since: t0, now: t0.Add(5*time.Hour + time.Minute), create: "15:00", next: "16:00"},
		{name: "previous still runs: skipped", since: t0, now: t0.Add(61 * time.Minute), gate: busy, skipped: true, next: "12:00"},
		{name: "suspended", since: t0, now: t0.Add(61 * time.Minute), gate: held, next: "12:00"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := nextTick(hourly, c.since, c.now, c.gate)
			create := ""
			if got.create != nil {
				create = got.create.Format("15:04")
			}
			if create != c.create || got.skipped != c.skipped || got.next.Format("15:04") != c.next {
				t.Errorf("create %q skipped %v next %s, want %q %v %s", create, got.skipped, got.next.Format("15:04"), c.create, c.skipped, c.next)
			}
		})
	}
	every, _ := validation.ParseSchedule("@every 20s")
	if got := nextTick(every, t0, t0.Add(45*time.Second), open); got.create == nil || !got.create.Equal(t0.Add(40*time.Second)) {
		t.Errorf("@every 20s after 45 s: %+v", got)
	}
}

func TestRetentionVictims(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	b := func(name string, age time.Duration, phase v1alpha1.BackupPhase) v1alpha1.ValkeyBackup {
		return v1alpha1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))},
			Status: v1alpha1.ValkeyBackupStatus{Phase: phase}}
	}
	all := []v1alpha1.ValkeyBackup{
		b("c1", 5*time.Hour, v1alpha1.BackupCompleted), b("c2", 4*time.Hour, v1alpha1.BackupCompleted),
		b("f1", 3*time.Hour+30*time.Minute, v1alpha1.BackupFailed), b("c3", 3*time.Hour, v1alpha1.BackupCompleted),
		b("f2", 2*time.Hour, v1alpha1.BackupFailed), b("run", time.Minute, v1alpha1.BackupRunning),
	}
	cases := []struct {
		name string
		r    v1alpha1.BackupRetention
		want string
	}{
		{name: "none: only failed ones older than the newest completed", want: "f1"},
		{name: "keep 2", r: v1alpha1.BackupRetention{KeepLast: ptr.To[int32](2)}, want: "f1,c1"},
		{name: "keep 1", r: v1alpha1.BackupRetention{KeepLast: ptr.To[int32](1)}, want: "f1,c2,c1"},
		{name: "max age 4h30m", r: v1alpha1.BackupRetention{MaxAge: &metav1.Duration{Duration: 4*time.Hour + 30*time.Minute}}, want: "f1,c1"},
		{name: "max age 1h: the newest completed stays", r: v1alpha1.BackupRetention{MaxAge: &metav1.Duration{Duration: time.Hour}}, want: "f1,c2,c1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := strings.Join(retentionVictims(all, c.r, now), ","); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

func TestRestoreOutcome(t *testing.T) {
	m := layout.Summary{Shards: 2, Keys: 15}
	done := func(n int64) restoreJobView {
		return restoreJobView{state: jobSucceeded, hasResult: true, result: jobapi.Result{Restored: n}}
	}
	cases := []struct {
		name   string
		views  map[int32]restoreJobView
		status bool
		reason string
		final  bool
	}{
		{name: "running", views: map[int32]restoreJobView{0: done(10), 1: {state: jobRunning}}, reason: v1alpha1.ReasonRestoreInProgress},
		{name: "all done", views: map[int32]restoreJobView{0: done(10), 1: done(5)}, status: true, reason: v1alpha1.ReasonRestored, final: true},
		{name: "checksum", final: true, reason: v1alpha1.ReasonChecksumMismatch, views: map[int32]restoreJobView{0: done(10),
			1: {state: jobFailed, hasResult: true, result: jobapi.Result{Reason: jobapi.ReasonChecksumMismatch, Message: "bad"}}}},
		{name: "missing object", final: true, reason: v1alpha1.ReasonNotFound, views: map[int32]restoreJobView{0: done(10),
			1: {state: jobFailed, hasResult: true, result: jobapi.Result{Reason: jobapi.ReasonNotFound}}}},
		{name: "failed without result", final: true, reason: v1alpha1.ReasonRestoreFailed, views: map[int32]restoreJobView{0: done(10),
			1: {state: jobFailed, message: "deadline"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := restoreOutcome(m, c.views, "b", 3)
			if got.status != c.status || got.reason != c.reason || got.final != c.final {
				t.Errorf("got %+v", got)
			}
		})
	}
}

func TestVersionsLoad(t *testing.T) {
	node := func(v string) v1alpha1.ValkeyNode {
		vn := v1alpha1.ValkeyNode{}
		vn.Status.Version = v
		return vn
	}
	m9 := layout.Summary{Shards: 1, RDBVersion: 80, ValkeyVersion: "9.1.2"}
	m8 := layout.Summary{Shards: 1, RDBVersion: 11, ValkeyVersion: "8.1.1"}
	if ok, msg := versionsLoad(m9, []v1alpha1.ValkeyNode{node("8.0.1"), node("9.1.2")}); ok || !strings.Contains(msg, "loads RDB formats up to 11") {
		t.Errorf("9.1 backup into a cluster with an 8.0 member: %v %s", ok, msg)
	}
	if ok, _ := versionsLoad(m9, []v1alpha1.ValkeyNode{node("9.1.2")}); !ok {
		t.Error("9.1 into 9.1 refused")
	}
	if ok, _ := versionsLoad(m8, []v1alpha1.ValkeyNode{node("8.0.1")}); !ok {
		t.Error("8.1 (RDB 11) into 8.0 refused")
	}
}

// A backup Job mounts only the _backup key and the TLS CA, and never reaches the API.
func TestBackupJobMountsOnlyWhatItNeeds(t *testing.T) {
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns"}}
	vc.Spec.TLS = &v1alpha1.TLSSpec{Certificate: &v1alpha1.CertificateSpec{SecretName: "user-cert"}}
	vc.Status.ACL = &v1alpha1.ACLStatus{SecretName: "published-acl", SystemUsersSecretName: "published-users"}
	vc.Status.TLS = &v1alpha1.TLSStatus{SecretName: "user-cert", AcceptedSecretName: "published-copy"}
	vb := &v1alpha1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}}
	vb.Spec.ObjectStore = v1alpha1.ObjectStoreSpec{S3: &v1alpha1.S3Spec{Bucket: "bkt", Endpoint: "https://s3:9000", ForcePathStyle: true,
		Credentials: v1alpha1.S3Credentials{SecretName: "creds"}, CABundle: &v1alpha1.SecretKeySelector{SecretName: "s3ca"}}}
	j := backupJob(JobSettings{Image: "op:1", DeadlineSeconds: 60}, vb, vc, 2, 1, source{node: "demo-x", ip: "10.0.0.9", role: v1alpha1.RoleReplica}, "p/ns/demo/b-1")
	pod := j.Spec.Template.Spec
	if j.Spec.Template.Labels[v1alpha1.LabelName] == v1alpha1.AppName {
		t.Error("a Job's pod has the members' labels: the cluster's Services would select it")
	}
	if j.Name != "b-s2-1" || *pod.AutomountServiceAccountToken || *j.Spec.BackoffLimit != 0 {
		t.Fatalf("job %s automount %v backoff %d", j.Name, *pod.AutomountServiceAccountToken, *j.Spec.BackoffLimit)
	}
	secrets := map[string][]string{}
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			for _, it := range v.Secret.Items {
				secrets[v.Secret.SecretName] = append(secrets[v.Secret.SecretName], it.Key)
			}
			if len(v.Secret.Items) == 0 {
				t.Errorf("Secret %s is mounted whole", v.Secret.SecretName)
			}
		}
	}
	// The Secrets status.acl and status.tls name, not those of the names' convention.
	want := map[string]string{"published-users": v1alpha1.UserBackup, "published-copy": "ca.crt", "s3ca": "ca.crt"}
	for s, k := range want {
		if got := strings.Join(secrets[s], ","); got != k {
			t.Errorf("Secret %s: keys %q, want %q", s, got, k)
		}
	}
	if len(secrets) != len(want) {
		t.Errorf("mounted Secrets %v", secrets)
	}
	args := strings.Join(pod.Containers[0].Args, " ")
	for _, w := range []string{"backup ", "--addr=10.0.0.9:6379", "--role=replica", "--object=p/ns/demo/b-1/shard-2.rdb", "--path-style", "--tls-ca-file=", "--ca-bundle-file="} {
		if !strings.Contains(args, w) {
			t.Errorf("args %q lack %q", args, w)
		}
	}
	for _, e := range pod.Containers[0].Env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != "creds" {
			t.Errorf("env %s is not from the credentials Secret", e.Name)
		}
	}
}

func TestRestoreJob(t *testing.T) {
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns"}}
	vc.Spec.Image = "valkey/valkey:8.0.1"
	vc.Status.ACL = &v1alpha1.ACLStatus{SecretName: "published-acl", SystemUsersSecretName: "published-users"}
	store := &v1alpha1.ObjectStoreSpec{S3: &v1alpha1.S3Spec{Bucket: "bkt", Credentials: v1alpha1.S3Credentials{SecretName: "creds"}}}
	j := restoreJob(JobSettings{Image: "op:1", DeadlineSeconds: 60}, vc, store, "p/b-1", 1, layout.Summary{Shards: 2, MaxObjectSize: 1 << 30})
	pod := j.Spec.Template.Spec
	if j.Spec.Template.Labels[v1alpha1.LabelName] == v1alpha1.AppName {
		t.Error("a restore Job's pod has the members' labels")
	}
	if j.Name != "demo-restore-1" || len(pod.InitContainers) != 2 || len(pod.Containers) != 1 {
		t.Fatalf("job %s: %d init, %d containers", j.Name, len(pod.InitContainers), len(pod.Containers))
	}
	server := pod.InitContainers[1]
	if server.Image != vc.Spec.Image || server.RestartPolicy == nil || *server.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("the private server is not a sidecar of the cluster's image: %+v", server)
	}
	if got := server.Resources.Requests.Memory().Value(); got != 2<<30 {
		t.Errorf("private server memory request %d, want twice the largest snapshot", got)
	}
	if args := strings.Join(pod.InitContainers[0].Args, " "); args != "restore-fetch --dir=p/b-1 --shard=1 --shards=2 --out=/data/dump.rdb --bucket=bkt --region=us-east-1" {
		t.Errorf("fetch args %q: the fetch reads the manifest of the backup for its shard", args)
	}
	if !strings.Contains(strings.Join(server.Args, " "), "--bind 127.0.0.1") {
		t.Errorf("the private server listens beyond loopback: %v", server.Args)
	}
	users := 0
	for _, v := range pod.Volumes {
		if v.Secret != nil && v.Secret.SecretName == "published-users" {
			users++
			if len(v.Secret.Items) != 1 || v.Secret.Items[0].Key != v1alpha1.UserRestore {
				t.Errorf("system users mounted as %+v", v.Secret.Items)
			}
		}
	}
	if users != 1 {
		t.Errorf("the Secret status.acl names is mounted %d times, want once", users)
	}
	if args := strings.Join(pod.Containers[0].Args, " "); !strings.Contains(args, "--cluster=demo.ns.svc:6379") {
		t.Errorf("load args %s", args)
	}
}

func TestClusterReadyForRestore(t *testing.T) {
	cond := func(typ string) metav1.Condition { return metav1.Condition{Type: typ, Status: metav1.ConditionTrue} }
	formed := func() *v1alpha1.ValkeyCluster {
		vc := &v1alpha1.ValkeyCluster{}
		vc.Status.Conditions = []metav1.Condition{cond(v1alpha1.ConditionClusterFormed), cond(v1alpha1.ConditionSlotsAssigned)}
		vc.Status.ACL = &v1alpha1.ACLStatus{SecretName: "a", SystemUsersSecretName: "u"}
		return vc
	}
	applied := func(version string) v1alpha1.ValkeyNode {
		vn := v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: "m"}}
		vn.Status.Version = version
		vn.Status.Conditions = []metav1.Condition{cond(v1alpha1.ConditionACLApplied)}
		return vn
	}
	if ok, msg := clusterReadyForRestore(formed(), []v1alpha1.ValkeyNode{applied("8.0.1")}); !ok {
		t.Errorf("formed cluster not ready: %s", msg)
	}
	notFormed := formed()
	notFormed.Status.Conditions = notFormed.Status.Conditions[1:]
	if ok, _ := clusterReadyForRestore(notFormed, []v1alpha1.ValkeyNode{applied("8.0.1")}); ok {
		t.Error("a cluster not formed is ready")
	}
	if ok, _ := clusterReadyForRestore(formed(), []v1alpha1.ValkeyNode{applied("")}); ok {
		t.Error("a member without a version is ready")
	}
	unpublished := formed()
	unpublished.Status.ACL = nil
	if ok, msg := clusterReadyForRestore(unpublished, []v1alpha1.ValkeyNode{applied("8.0.1")}); ok ||
		!strings.HasPrefix(msg, "status.acl.systemUsersSecretName is not set: waiting for the acl-controller") {
		t.Errorf("a cluster whose status.acl names no Secret: ready %v, %q", ok, msg)
	}
	pendingACL := applied("8.0.1")
	pendingACL.Status.Conditions = nil
	if ok, _ := clusterReadyForRestore(formed(), []v1alpha1.ValkeyNode{pendingACL}); ok {
		t.Error("a member without the restore user is ready")
	}
}

func TestFinalRestored(t *testing.T) {
	for reason, final := range map[string]bool{
		v1alpha1.ReasonRestoreInProgress: false, v1alpha1.ReasonNotFound: false, v1alpha1.ReasonWaitingForCluster: false,
		v1alpha1.ReasonChecksumMismatch: true, v1alpha1.ReasonVersionTooNew: true, v1alpha1.ReasonRestoreFailed: true,
	} {
		vc := &v1alpha1.ValkeyCluster{}
		vc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionRestored, Status: metav1.ConditionFalse, Reason: reason}}
		if finalRestored(vc) != final {
			t.Errorf("Restored=False %s: final %v, want %v", reason, !final, final)
		}
	}
}

// A paused cluster defers its schedule: no backup while paused, the tick is not
// recorded as served, and the first pass after the resume takes the newest one due.
func TestScheduleDeferredWhilePaused(t *testing.T) {
	hourly, _ := validation.ParseSchedule("0 * * * *")
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	vs := &v1alpha1.ValkeyBackupSchedule{Spec: v1alpha1.ValkeyBackupScheduleSpec{ClusterName: "vk"}}
	paused := nextTick(hourly, t0, t0.Add(61*time.Minute), held)
	if paused.create != nil {
		t.Fatalf("a backup is created while paused: %+v", paused)
	}
	c := deferredCondition(vs, t0, paused)
	if c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonPaused ||
		c.Message != "cluster vk is paused: the backup due at 2026-12-01T11:00:00Z is deferred until the cluster is resumed, then taken at once" {
		t.Errorf("Scheduled while a tick is deferred: %s %s %q", c.Status, c.Reason, c.Message)
	}
	if c := deferredCondition(vs, t0, nextTick(hourly, t0, t0.Add(time.Minute), held)); c.Message !=
		"cluster vk is paused: a backup that comes due (next at 2026-12-01T11:00:00Z) is deferred until the cluster is resumed, then taken at once" {
		t.Errorf("Scheduled while paused before a tick: %q", c.Message)
	}
	// Resumed at 12:30: since stayed at t0, so the newest tick that came (12:00) is served.
	resumed := nextTick(hourly, t0, t0.Add(150*time.Minute), open)
	if resumed.create == nil || resumed.create.Format("15:04") != "12:00" {
		t.Errorf("after the resume: %+v, want the 12:00 backup created", resumed)
	}
}

func TestDecideManifestRead(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	job := func(n int) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: readManifestJobName("vk", n)}}
	}
	failedRun := func(n int, reason string, ago time.Duration) storeRun {
		return storeRun{job: job(n), n: n, state: jobFailed, reason: reason, message: "m", finished: now.Add(-ago)}
	}
	running := func(n int) storeRun { return storeRun{job: job(n), n: n, state: jobRunning} }
	sum := &layout.Summary{Shards: 2}
	cases := []struct {
		name    string
		runs    []storeRun
		start   int
		remove  int
		reason  string
		final   bool
		wait    time.Duration
		summary bool
	}{
		{name: "nothing yet: the first Job", start: 1, reason: v1alpha1.ReasonRestoreInProgress},
		{name: "the first Job runs", runs: []storeRun{running(1)}, reason: v1alpha1.ReasonRestoreInProgress},
		{name: "read: the summary", runs: []storeRun{{job: job(1), n: 1, state: jobSucceeded, ok: true, result: jobapi.Result{Manifest: sum}}}, summary: true},
		{name: "succeeded without a summary: tried again", runs: []storeRun{{job: job(1), n: 1, state: jobSucceeded, ok: true, finished: now.Add(-time.Minute)}},
			start: 2, reason: v1alpha1.ReasonRestoreInProgress},
		{name: "missing, just now: NotFound, wait", runs: []storeRun{failedRun(1, jobapi.ReasonNotFound, 10*time.Second)},
			reason: v1alpha1.ReasonNotFound, wait: 20 * time.Second},
		{name: "missing, a while ago: the next Job", runs: []storeRun{failedRun(1, jobapi.ReasonNotFound, time.Minute)},
			start: 2, reason: v1alpha1.ReasonNotFound},
		{name: "the next Job runs: the last failure still speaks", runs: []storeRun{failedRun(1, jobapi.ReasonAccessDenied, time.Minute), running(2)},
			reason: v1alpha1.ReasonAccessDenied},
		{name: "third attempt: the oldest goes", runs: []storeRun{failedRun(1, jobapi.ReasonNotFound, 2*time.Minute), failedRun(2, jobapi.ReasonStoreUnreachable, time.Minute)},
			start: 3, remove: 1, reason: v1alpha1.ReasonStoreUnreachable},
		{name: "unreadable: final", runs: []storeRun{failedRun(1, jobapi.ReasonChecksumMismatch, time.Hour)},
			reason: v1alpha1.ReasonChecksumMismatch, final: true},
		{name: "out of time: tried again", runs: []storeRun{failedRun(1, v1alpha1.ReasonDeadlineExceeded, time.Minute)},
			start: 2, reason: v1alpha1.ReasonRestoreInProgress},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := decideManifestRead(c.runs, "p/b", 30*time.Second, now)
			if (d.summary != nil) != c.summary || d.start != c.start || len(d.remove) != c.remove ||
				(!c.summary && (d.state.reason != c.reason || d.state.final != c.final || d.state.wait != c.wait)) {
				t.Errorf("got summary %v start %d remove %d state %+v", d.summary, d.start, len(d.remove), d.state)
			}
		})
	}
}

// A store Job mounts the store's credentials and nothing else of the tenant, and the
// manifest Job also the backup's ConfigMap.
func TestStoreJobs(t *testing.T) {
	vb := &v1alpha1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("b", validation.MaxBackupNameLength), Namespace: "ns"}}
	vb.Spec.ClusterName = "demo"
	vb.Spec.ObjectStore = v1alpha1.ObjectStoreSpec{S3: &v1alpha1.S3Spec{Bucket: "bkt", Credentials: v1alpha1.S3Credentials{SecretName: "creds"},
		CABundle: &v1alpha1.SecretKeySelector{SecretName: "s3ca"}}}
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("c", validation.MaxClusterNameLength), Namespace: "ns"}}
	s := JobSettings{Image: "op:1", DeadlineSeconds: 3600}
	for _, j := range []*batchv1.Job{
		probeJob(s, vb, nil), manifestJob(s, vb, "p/x", nil, 3), deleteJob(s, vb, "p/x", nil, MaxDeleteAttempts),
		readManifestJob(s, vc, &vb.Spec.ObjectStore, "p/x", 99999),
	} {
		if len(j.Name) > 63 {
			t.Errorf("Job %s: its name does not fit the job-name label of its pods", j.Name)
		}
		pod := j.Spec.Template.Spec
		if *j.Spec.ActiveDeadlineSeconds != 300 || *j.Spec.BackoffLimit != 0 || *pod.AutomountServiceAccountToken {
			t.Errorf("Job %s: deadline %d backoff %d token %v", j.Name, *j.Spec.ActiveDeadlineSeconds, *j.Spec.BackoffLimit, *pod.AutomountServiceAccountToken)
		}
		for _, v := range pod.Volumes {
			switch {
			case v.Secret != nil && (v.Secret.SecretName != "s3ca" || len(v.Secret.Items) != 1):
				t.Errorf("Job %s mounts Secret %s as %+v", j.Name, v.Secret.SecretName, v.Secret.Items)
			case v.ConfigMap != nil && (j.Labels[v1alpha1.LabelComponent] != componentManifest || v.ConfigMap.Name != manifestConfigMapName(vb)):
				t.Errorf("Job %s mounts ConfigMap %s", j.Name, v.ConfigMap.Name)
			}
		}
		if got := pod.Containers[0].Resources.Limits.Memory().Value(); got != 128<<20 {
			t.Errorf("Job %s: memory limit %d", j.Name, got)
		}
	}
}

// Every Job that reaches a store gets the operator's endpoint policy as flags, to check
// the addresses it connects to; restore-load, which reaches only the cluster and its
// private server, does not.
func TestStoreJobsCarryTheEndpointPolicy(t *testing.T) {
	policy, err := validation.ParseEndpointPolicy("minio.storage.svc,10.0.0.0/8", "10.96.0.1,192.0.2.10")
	if err != nil {
		t.Fatal(err)
	}
	s := JobSettings{Image: "op:1", DeadlineSeconds: 60, StorePolicy: policy}
	want := []string{"--object-store-allowed-endpoints=minio.storage.svc,10.0.0.0/8", "--kubernetes-api-addresses=10.96.0.1,192.0.2.10"}
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns"}}
	vb := &v1alpha1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}}
	vb.Spec.ClusterName = "demo"
	vb.Spec.ObjectStore = v1alpha1.ObjectStoreSpec{S3: &v1alpha1.S3Spec{Bucket: "bkt", Endpoint: "http://minio.storage.svc:9000",
		Credentials: v1alpha1.S3Credentials{SecretName: "creds"}}}
	jobs := []*batchv1.Job{
		backupJob(s, vb, vc, 0, 1, source{node: "demo-x", ip: "10.0.0.9", role: v1alpha1.RoleReplica}, "p/b-1"),
		restoreJob(s, vc, &vb.Spec.ObjectStore, "p/b-1", 0, layout.Summary{Shards: 1}),
		probeJob(s, vb, nil), manifestJob(s, vb, "p/b-1", nil, 1), deleteJob(s, vb, "p/b-1", nil, 1),
		readManifestJob(s, vc, &vb.Spec.ObjectStore, "p/b-1", 1),
	}
	commands := 0
	for _, j := range jobs {
		pod := j.Spec.Template.Spec
		for _, c := range append(append([]corev1.Container{}, pod.InitContainers...), pod.Containers...) {
			if len(c.Args) == 0 || !slices.Contains(jobapi.Commands, c.Args[0]) {
				continue // the private server of a restore
			}
			commands++
			args := strings.Join(c.Args, " ")
			for _, w := range want {
				if c.Args[0] == jobapi.CmdRestoreLoad {
					if strings.Contains(args, "--object-store-") {
						t.Errorf("Job %s: %s reaches no store, yet gets the policy: %s", j.Name, c.Args[0], args)
					}
					continue
				}
				if !strings.Contains(args, w) {
					t.Errorf("Job %s: %s lacks %s: %s", j.Name, c.Args[0], w, args)
				}
			}
		}
	}
	if commands != 7 {
		t.Errorf("found %d commands in the Jobs, want 7 (backup, restore-fetch, restore-load and four store steps)", commands)
	}
}
