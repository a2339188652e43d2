package plugin

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

var now = time.Date(2026, 12, 1, 17, 0, 0, 0, time.UTC)

func cond(t, status, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: reason, Message: msg,
		LastTransitionTime: metav1.NewTime(now.Add(-2 * time.Minute))}
}

func member(name string, shard int32, role v1alpha1.Role, synced metav1.Condition) v1alpha1.ValkeyNode {
	n := v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	n.Spec.ShardIndex, n.Spec.Revision = shard, 1
	n.Status = v1alpha1.ValkeyNodeStatus{PodName: name + "-0", PodIP: "10.0.0.1", Role: role, Version: "8.0.1", Revision: 1,
		Lifecycle: v1alpha1.LifecycleActive, Conditions: []metav1.Condition{cond(v1alpha1.ConditionPodReady, "True", "Running", ""), synced}}
	return n
}

func TestRender(t *testing.T) {
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "vk", Namespace: "ns", Generation: 3}}
	vc.Spec.Shards, vc.Spec.ReplicasPerShard = 2, ptr.To[int32](1)
	vc.Status = v1alpha1.ValkeyClusterStatus{State: v1alpha1.StateUpdating, ReadyShards: 2, ObservedGeneration: 3,
		Shards: []v1alpha1.ShardStatus{
			{Index: 0, Primary: "vk-aaaaa", Slots: []string{"0-8191"}, PrimaryNode: "node-1", PrimaryZone: "zone-a"},
			{Index: 1, Primary: "vk-ccccc", Slots: []string{"8192-16383"}, PrimaryNode: "node-2", PrimaryZone: "zone-b"}},
		Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionDegraded, "False", "ClusterReady", "every shard has its primary"),
			cond(v1alpha1.ConditionProgressing, "True", "Rolling", "shard 0: waiting for successor vk-eeeee to sync"),
			cond(v1alpha1.ConditionReady, "True", "ClusterReady", "2 shards with 1 replicas each serve all 16384 slots"),
			cond(v1alpha1.ConditionPrimariesSpread, "True", v1alpha1.ReasonSpread, "the 2 primaries run on 2 nodes in 2 zones"),
		}}
	v := &clusterView{vc: vc, maxEvents: 1, nodes: []v1alpha1.ValkeyNode{
		member("vk-ddddd", 1, v1alpha1.RoleReplica, cond(v1alpha1.ConditionSynced, "False", v1alpha1.ReasonLinkDown, "")),
		member("vk-ccccc", 1, v1alpha1.RolePrimary, cond(v1alpha1.ConditionSynced, "True", v1alpha1.ReasonIsPrimary, "")),
		member("vk-bbbbb", 0, v1alpha1.RoleReplica, cond(v1alpha1.ConditionSynced, "True", v1alpha1.ReasonSynced, "")),
		member("vk-aaaaa", 0, v1alpha1.RolePrimary, cond(v1alpha1.ConditionSynced, "True", v1alpha1.ReasonIsPrimary, "")),
	}, events: []eventsv1.Event{
		{Reason: "MemberCreated", Type: "Normal", Note: "created member vk-eeeee", EventTime: metav1.NewMicroTime(now.Add(-time.Minute)),
			Regarding: corev1.ObjectReference{Kind: "ValkeyCluster", Name: "vk"}},
		{Reason: "Old", Type: "Normal", Note: "older", EventTime: metav1.NewMicroTime(now.Add(-time.Hour)),
			Regarding: corev1.ObjectReference{Kind: "ValkeyCluster", Name: "vk"}},
	}}
	v.nodes[0].Status.NodeName = "node-1" // vk-ddddd, beside shard 0's primary
	v.nodes[1].Status.NodeName = "node-2"
	v.nodes[2].Status.NodeName = "node-3" // vk-bbbbb, on a node without a primary: zone not known
	v.nodes[3].Status.NodeName = "node-1"
	var b bytes.Buffer
	render(&b, v, now)
	out := b.String()
	for _, want := range []string{
		"ValkeyCluster ns/vk  state Updating  shards 2/2 ready  replicas per shard 1  paused no",
		"SHARD  MEMBER    ROLE     LIFECYCLE  SLOTS       SYNC       POD         IP        NODE    ZONE    VERSION",
		"0      vk-aaaaa  primary  Active     0-8191      -          vk-aaaaa-0  10.0.0.1  node-1  zone-a  8.0.1",
		"0      vk-bbbbb  replica  Active     -           in sync    vk-bbbbb-0  10.0.0.1  node-3  -       8.0.1",
		"1      vk-ddddd  replica  Active     -           link down  vk-ddddd-0  10.0.0.1  node-1  zone-a  8.0.1",
		"PrimariesSpread  True    Spread",
		"Progressing      True    Rolling",
		"MemberCreated",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "Ready ") > strings.Index(out, "Progressing ") {
		t.Errorf("Ready is not the first condition:\n%s", out)
	}
	if strings.Contains(out, "older") {
		t.Errorf("more events than asked for:\n%s", out)
	}
	if strings.Index(out, "vk-ccccc") > strings.Index(out, "vk-ddddd") {
		t.Errorf("the primary of shard 1 is not listed first:\n%s", out)
	}
}

func TestCLIPodKeepsThePasswordOutOfItsArguments(t *testing.T) {
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "vk", Namespace: "ns", UID: "u1"}}
	vc.Spec.Users = []v1alpha1.UserSpec{
		{Name: "app", PasswordSecret: &v1alpha1.PasswordSecretRef{Name: "app-pw", Keys: []string{"current", "next"}}},
		{Name: "guest", NoPass: true},
	}
	pod, err := cliPod(vc, "app", "", []string{"GET", "k"})
	if err != nil {
		t.Fatal(err)
	}
	c := pod.Spec.Containers[0]
	if got := strings.Join(append(c.Command, c.Args...), " "); got != "valkey-cli -c -h vk.ns.svc -p 6379 --user app GET k" {
		t.Errorf("command = %q", got)
	}
	var refs int
	for _, e := range c.Env {
		if e.Value != "" && e.Name != "HOME" {
			t.Errorf("env %s has a literal value", e.Name)
		}
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			if r := e.ValueFrom.SecretKeyRef; r.Name != "app-pw" || r.Key != "current" {
				t.Errorf("env %s from %s/%s, want app-pw/current", e.Name, r.Name, r.Key)
			}
			refs++
		}
	}
	if refs == 0 {
		t.Error("no password from the Secret in the environment")
	}
	if c.TTY || c.Stdin {
		t.Error("a pod with a command is interactive")
	}
	if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].UID != "u1" {
		t.Errorf("owner references = %v, want the cluster", pod.OwnerReferences)
	}

	if _, err := cliPod(vc, "_operator", "img", nil); err == nil ||
		!strings.Contains(err.Error(), "status.acl.systemUsersSecretName is not set: waiting for the acl-controller") {
		t.Errorf("a system user before status.acl names its Secret: %v", err)
	}
	vc.Status.ACL = &v1alpha1.ACLStatus{SecretName: "named-acl", SystemUsersSecretName: "named-users"}
	pod, err = cliPod(vc, "_operator", "img", nil)
	if err != nil {
		t.Fatal(err)
	}
	c = pod.Spec.Containers[0]
	if !c.TTY || !c.Stdin || c.Image != "img" {
		t.Errorf("interactive pod: tty %v stdin %v image %s", c.TTY, c.Stdin, c.Image)
	}
	if r := c.Env[1].ValueFrom.SecretKeyRef; r.Name != "named-users" || r.Key != "_operator" {
		t.Errorf("system user's password from %s/%s", r.Name, r.Key)
	}

	pod, err = cliPod(vc, "guest", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Containers[0].Env) != 1 {
		t.Errorf("a nopass user gets %v", pod.Spec.Containers[0].Env)
	}
	if _, err := cliPod(vc, "nobody", "", nil); err == nil {
		t.Error("an unknown user is accepted")
	}

	vc.Spec.TLS = &v1alpha1.TLSSpec{Certificate: &v1alpha1.CertificateSpec{SecretName: "mine"}}
	if _, err := cliPod(vc, "app", "", nil); err == nil ||
		!strings.Contains(err.Error(), "status.tls.acceptedSecretName is not set: waiting for the tls-controller") {
		t.Errorf("TLS before status.tls names the accepted copy: %v", err)
	}
	vc.Status.TLS = &v1alpha1.TLSStatus{SecretName: "mine", AcceptedSecretName: "named-copy"}
	pod, _ = cliPod(vc, "app", "", nil)
	if args := strings.Join(pod.Spec.Containers[0].Args, " "); !strings.Contains(args, "--tls --cacert /etc/valkey/tls/ca.crt") {
		t.Errorf("TLS args = %s", args)
	}
	if pod.Spec.Volumes[1].Secret.SecretName != "named-copy" {
		t.Errorf("CA from %s, want the accepted copy", pod.Spec.Volumes[1].Secret.SecretName)
	}
}

func TestRestartProgress(t *testing.T) {
	at := now
	mk := func(shard int32, restarted string, rev, running int64, leaving bool) v1alpha1.ValkeyNode {
		n := v1alpha1.ValkeyNode{}
		n.Spec.ShardIndex, n.Spec.RestartedAt, n.Spec.Revision, n.Status.Revision = shard, restarted, rev, running
		if leaving {
			n.DeletionTimestamp = &metav1.Time{Time: now}
		}
		return n
	}
	nodes := []v1alpha1.ValkeyNode{
		mk(0, "2026-12-01T17:00:00Z", 1, 1, false), // a successor
		mk(0, "2026-12-01T17:00:00Z", 3, 2, false), // restarting in place
		mk(0, "", 1, 1, true),                      // an old member leaving
		mk(1, "", 1, 1, false),
	}
	if d, tot, l := restartProgress(nodes, 0, at); d != 1 || tot != 2 || l != 1 {
		t.Errorf("shard 0: %d of %d, %d leaving; want 1 of 2, 1 leaving", d, tot, l)
	}
	if d, tot, _ := restartProgress(nodes, -1, at); d != 1 || tot != 3 {
		t.Errorf("all shards: %d of %d; want 1 of 3", d, tot)
	}
}

// TestFailoverRequest: each call asks with a new value, waits until status answers that
// value, and fails with the controller's reason when it is refused.
func TestFailoverRequest(t *testing.T) {
	if a, b := failoverValue(1, "", now), failoverValue(1, "", now.Add(time.Millisecond)); a == b {
		t.Errorf("two requests share the value %q", a)
	}
	if got := failoverValue(2, "vk-bbbbb", now); got != "2/vk-bbbbb@2026-12-01T17:00:00Z" {
		t.Errorf("value = %q", got)
	}
	value := failoverValue(1, "", now)
	answer := func(request string, phase v1alpha1.FailoverRequestPhase, msg string) *v1alpha1.ValkeyCluster {
		vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationFailover: value}}}
		if request != "" {
			vc.Status.Failover = &v1alpha1.FailoverRequestStatus{Request: request, Phase: phase, Target: "vk-ddddd", Message: msg}
		}
		return vc
	}
	cases := []struct {
		name    string
		vc      *v1alpha1.ValkeyCluster
		done    bool
		line    string
		err     string
		pending string
	}{
		{name: "not seen yet", vc: answer("", "", ""), pending: `"` + value + `", not seen by the cluster-controller yet`},
		{name: "status answers an earlier value", vc: answer("1@earlier", v1alpha1.FailoverRequestDone, "vk-ccccc serves shard 1"),
			pending: `"` + value + `", not seen by the cluster-controller yet`},
		{name: "waiting", vc: answer(value, v1alpha1.FailoverRequestPending, "waiting for a replica in sync"),
			line: "Pending: waiting for a replica in sync", pending: `"` + value + `" Pending: waiting for a replica in sync`},
		{name: "asked", vc: answer(value, v1alpha1.FailoverRequestInProgress, "vk-ddddd was asked to take over shard 1 from vk-ccccc"),
			line: "InProgress: vk-ddddd was asked to take over shard 1 from vk-ccccc", pending: `"` + value + `" InProgress: vk-ddddd was asked to take over shard 1 from vk-ccccc`},
		{name: "done", vc: answer(value, v1alpha1.FailoverRequestDone, "vk-ddddd serves shard 1"), done: true,
			line: "shard 1: vk-ddddd is the primary now (was vk-ccccc)"},
		{name: "refused", vc: answer(value, v1alpha1.FailoverRequestRefused, "shard 1 has no replica to take over"),
			err: "the failover request was refused: shard 1 has no replica to take over"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			done, line, err := failoverProgress(c.vc, value, 1, "vk-ccccc")
			if done != c.done || line != c.line || (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
				t.Errorf("progress = %v, %q, %v; want %v, %q, %q", done, line, err, c.done, c.line, c.err)
			}
			if got := pendingFailover(c.vc); got != c.pending {
				t.Errorf("pending = %q, want %q", got, c.pending)
			}
		})
	}
}

// TestRenderInFlight: status shows a pending failover request, a running rotation and a
// certificate rollout, read from the cluster's status; nothing when all are answered.
func TestRenderInFlight(t *testing.T) {
	since := metav1.NewTime(now.Add(-90 * time.Second))
	reload := metav1.NewTime(now.Add(time.Minute))
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "vk", Namespace: "ns", Annotations: map[string]string{
		v1alpha1.AnnotationFailover: "1@a", v1alpha1.AnnotationRotateSystemPasswords: "r2"}}}
	vc.Status.Failover = &v1alpha1.FailoverRequestStatus{Request: "1@a", Phase: v1alpha1.FailoverRequestPending, Message: "waiting for a replica in sync"}
	vc.Status.ACL = &v1alpha1.ACLStatus{Rotation: &v1alpha1.PasswordRotationStatus{Phase: v1alpha1.RotationPropagating, Request: "r2", PhaseSince: &since}}
	vc.Status.TLS = &v1alpha1.TLSStatus{Revision: "0a1b2c3d", Rollout: &v1alpha1.TLSRolloutStatus{Phase: v1alpha1.TLSRollingOut, ReloadAfter: &reload}}
	var b bytes.Buffer
	render(&b, &clusterView{vc: vc}, now)
	for _, want := range []string{
		"IN FLIGHT",
		`failover request "1@a" Pending: waiting for a replica in sync`,
		`password rotation "r2": Propagating for 90s`,
		"certificate revision 0a1b2c3d: RollingOut, members reload it from 2026-12-01T17:01:00Z",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, b.String())
		}
	}

	vc.Annotations[v1alpha1.AnnotationRotateSystemPasswords] = "r3"
	vc.Status.ACL.Rotation = &v1alpha1.PasswordRotationStatus{Phase: v1alpha1.RotationIdle, CompletedRequest: "r2"}
	if got := inFlight(vc, now); len(got) != 3 || got[1] != `password rotation "r3": requested, not started` {
		t.Errorf("a requested rotation: %q", got)
	}

	vc.Status.Failover.Phase = v1alpha1.FailoverRequestDone
	vc.Status.ACL.Rotation.CompletedRequest = "r3"
	vc.Status.TLS.Rollout = &v1alpha1.TLSRolloutStatus{Phase: v1alpha1.TLSRolledOut}
	b.Reset()
	render(&b, &clusterView{vc: vc}, now)
	if strings.Contains(b.String(), "IN FLIGHT") {
		t.Errorf("nothing is in flight:\n%s", b.String())
	}
}
