package cluster

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/guard"
	"github.com/valkey-operator/valkey-operator/valkey"
)

func cluster(mod func(*v1alpha1.ValkeyClusterSpec)) *v1alpha1.ValkeyCluster {
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "vk", Namespace: "ns"}}
	if mod != nil {
		mod(&vc.Spec)
	}
	return vc
}

func TestDiffSpec(t *testing.T) {
	v8 := valkey.Version{Major: 8, Minor: 0, Patch: 1}
	base := cluster(func(s *v1alpha1.ValkeyClusterSpec) {
		s.Config = map[string]string{"maxmemory": "100mb"}
		s.Persistence = &v1alpha1.PersistenceSpec{Size: resource.MustParse("1Gi")}
	})
	cases := []struct {
		name       string
		mod        func(*v1alpha1.ValkeyClusterSpec)
		live, roll bool
		fields     string // as messages name them
	}{
		{"nothing", func(*v1alpha1.ValkeyClusterSpec) {}, false, false, ""},
		{"maxmemory is live", func(s *v1alpha1.ValkeyClusterSpec) { s.Config["maxmemory"] = "200mb" }, true, false, "config"},
		{"maxmemory-policy added is live", func(s *v1alpha1.ValkeyClusterSpec) { s.Config["maxmemory-policy"] = "allkeys-lru" }, true, false, "config"},
		{"appendonly rolls", func(s *v1alpha1.ValkeyClusterSpec) { s.Config["appendonly"] = "yes" }, false, true, "config"},
		{"image rolls", func(s *v1alpha1.ValkeyClusterSpec) { s.Image = "valkey/valkey:9.1.2" }, false, true, "Image"},
		{"grace period rolls", func(s *v1alpha1.ValkeyClusterSpec) { s.TerminationGracePeriodSeconds = ptr.To[int64](90) }, false, true, "GracePeriod"},
		{"exporter off rolls", func(s *v1alpha1.ValkeyClusterSpec) { s.Exporter.Enabled = ptr.To(false) }, false, true, "Exporter"},
		{"volume growth is live", func(s *v1alpha1.ValkeyClusterSpec) { s.Persistence.Size = resource.MustParse("2Gi") }, true, false, "persistence.size"},
		{"a new reclaim policy reaches running members", func(s *v1alpha1.ValkeyClusterSpec) { s.Persistence.ReclaimPolicy = v1alpha1.ReclaimDelete }, true, false, "persistence.reclaimPolicy"},
		{"several at once are named in a fixed order", func(s *v1alpha1.ValkeyClusterSpec) {
			s.Persistence.StorageClassName = ptr.To("fast")
			s.TerminationGracePeriodSeconds = ptr.To[int64](90)
			s.Scheduling = &v1alpha1.SchedulingSpec{PriorityClassName: "high"}
			s.Image = "valkey/valkey:9.1.2"
			s.Config["maxmemory"] = "200mb"
		}, true, true, "config, Image, Scheduling, GracePeriod, StorageClass"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			have := desiredSpec(base, 0)
			next := base.DeepCopy()
			c.mod(&next.Spec)
			d := diffSpec(have, desiredSpec(next, 0), v8)
			if d.live != c.live || d.roll != c.roll || strings.Join(d.fields, ", ") != c.fields {
				t.Fatalf("diff = %+v, want live=%v roll=%v fields %q", d, c.live, c.roll, c.fields)
			}
		})
	}
}

func TestGracePeriod(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*v1alpha1.ValkeyClusterSpec)
		want int64
		warn bool
	}{
		{"default", nil, 30, false},
		{"long manual failover timeout raises it", func(s *v1alpha1.ValkeyClusterSpec) {
			s.Config = map[string]string{"cluster-manual-failover-timeout": "60000"}
		}, 70, false},
		{"in any spelling", func(s *v1alpha1.ValkeyClusterSpec) {
			s.Config = map[string]string{"Cluster-Manual-Failover-Timeout": "60000"}
		}, 70, false},
		{"explicit is honoured", func(s *v1alpha1.ValkeyClusterSpec) { s.TerminationGracePeriodSeconds = ptr.To[int64](60) }, 60, false},
		{"explicit too short warns", func(s *v1alpha1.ValkeyClusterSpec) { s.TerminationGracePeriodSeconds = ptr.To[int64](5) }, 5, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vc := cluster(c.mod)
			if got := *desiredSpec(vc, 0).TerminationGracePeriodSeconds; got != c.want {
				t.Errorf("grace period = %d, want %d", got, c.want)
			}
			cond := graceCondition(vc, 1)
			if (cond.Status == metav1.ConditionTrue) != c.warn {
				t.Errorf("warning = %v (%s), want %v", cond.Status, cond.Message, c.warn)
			}
			if c.warn && cond.Reason != v1alpha1.ReasonGracePeriodTooShort {
				t.Errorf("reason = %s", cond.Reason)
			}
		})
	}
}

// TestConfigurationWarning: config entries the key table refuses in a stored cluster
// (the guard's warnings) raise ConfigurationWarning, with the grace period's finding.
func TestConfigurationWarning(t *testing.T) {
	many := map[string]string{}
	for i := range 7 {
		many[fmt.Sprintf("old-key-%d", i)] = "yes"
	}
	for _, tc := range []struct {
		name   string
		mod    func(*v1alpha1.ValkeyClusterSpec)
		reason string
		want   []string
		absent string
	}{
		{name: "nothing to say", reason: v1alpha1.ReasonNoWarnings},
		{name: "an unknown key", mod: func(s *v1alpha1.ValkeyClusterSpec) { s.Config = map[string]string{"lua-replicate-commands": "yes"} },
			reason: v1alpha1.ReasonUnsupportedConfig,
			want: []string{`spec.config[lua-replicate-commands]: Invalid value: "lua-replicate-commands": is not a configuration key`,
				"the chart's policy.allowedConfigKeys", "a server may refuse the entry at the next restart of a member: remove or correct it"}},
		{name: "a value of the wrong type and a short grace period", mod: func(s *v1alpha1.ValkeyClusterSpec) {
			s.Config = map[string]string{"maxmemory": "lots"}
			s.TerminationGracePeriodSeconds = ptr.To[int64](5)
		}, reason: v1alpha1.ReasonUnsupportedConfig,
			want: []string{`spec.config[maxmemory]: Invalid value: "lots"`, "terminationGracePeriodSeconds 5 is below 15 s"}},
		{name: "many entries are counted past the first five", mod: func(s *v1alpha1.ValkeyClusterSpec) { s.Config = many },
			reason: v1alpha1.ReasonUnsupportedConfig, want: []string{"spec.config[old-key-4]", "; and 2 more config entries"}, absent: "old-key-5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vc := cluster(func(s *v1alpha1.ValkeyClusterSpec) {
				s.Shards, s.ReplicasPerShard, s.Image = 3, ptr.To[int32](1), v1alpha1.DefaultImage
				if tc.mod != nil {
					tc.mod(s)
				}
			})
			g := guard.Check(vc)
			if !g.Valid() {
				t.Fatalf("guard: %v; want the spec valid", g.Errs)
			}
			cond := warningCondition(g.ConfigWarnings, vc, 1)
			if cond.Type != v1alpha1.ConditionConfigurationWarning || cond.Reason != tc.reason ||
				(cond.Status == metav1.ConditionTrue) != (tc.reason != v1alpha1.ReasonNoWarnings) {
				t.Errorf("condition = %s %s %s; want reason %s", cond.Type, cond.Status, cond.Reason, tc.reason)
			}
			for _, w := range tc.want {
				if !strings.Contains(cond.Message, w) {
					t.Errorf("message %q; want it to contain %q", cond.Message, w)
				}
			}
			if tc.absent != "" && strings.Contains(cond.Message, tc.absent) {
				t.Errorf("message %q; want no %q", cond.Message, tc.absent)
			}
		})
	}
}

func TestDesiredSpecAppliesDefaults(t *testing.T) {
	spec := desiredSpec(cluster(nil), 2)
	if spec.ShardIndex != 2 || spec.Image != v1alpha1.DefaultImage || spec.WorkloadType != v1alpha1.WorkloadStatefulSet {
		t.Errorf("spec = %+v", spec)
	}
	if spec.Exporter.Enabled == nil || !*spec.Exporter.Enabled || spec.Exporter.Image != v1alpha1.DefaultExporterImage {
		t.Errorf("exporter = %+v", spec.Exporter)
	}
	if *spec.TerminationGracePeriodSeconds != 30 {
		t.Errorf("grace = %d", *spec.TerminationGracePeriodSeconds)
	}
}

// TestDesiredSpecMountsThePublishedSecrets: a member mounts the Secrets the acl- and
// tls-controllers name in the cluster's status, whatever their names, and a pass does not
// create or change members while one is not named (Progressing says what it waits for).
func TestDesiredSpecMountsThePublishedSecrets(t *testing.T) {
	vc := cluster(func(s *v1alpha1.ValkeyClusterSpec) {
		s.TLS = &v1alpha1.TLSSpec{Certificate: v1alpha1.CertificateSpec{SecretName: "user-cert"}}
	})
	if got := unpublished(vc); got == nil || got.Reason != v1alpha1.ReasonWaitingForACL {
		t.Errorf("nothing published: unpublished = %v; want the acl-controller's Secrets", got)
	}
	vc.Status.ACL = &v1alpha1.ACLStatus{SecretName: "named-acl", SystemUsersSecretName: "named-users"}
	if got := unpublished(vc); got == nil || got.Error() != "status.tls.acceptedSecretName is not set: waiting for the tls-controller "+
		"(TLSReady is not reported yet: is the tls-controller running?)" {
		t.Errorf("no accepted certificate named: unpublished = %v", got)
	}
	vc.Status.TLS = &v1alpha1.TLSStatus{SecretName: "user-cert", AcceptedSecretName: "named-copy"}
	if got := unpublished(vc); got != nil {
		t.Errorf("all published: unpublished = %v", got)
	}
	spec := desiredSpec(vc, 0)
	if spec.ACLSecretName != "named-acl" || spec.SystemUsersSecretName != "named-users" || spec.TLSSecretName != "named-copy" {
		t.Errorf("secrets = %q %q %q; want those status names", spec.ACLSecretName, spec.SystemUsersSecretName, spec.TLSSecretName)
	}

	s := &scope{vc: vc, unpublished: &v1alpha1.NotPublishedError{Field: "status.acl.secretName", Producer: "acl-controller",
		Reason: v1alpha1.ReasonWaitingForACL, Condition: "ACLReady=False PasswordMissing: user app: Secret pw not found"}}
	wait, err := (&Reconciler{}).awaitPublished(context.Background(), s)
	if err != nil || wait == 0 {
		t.Errorf("awaitPublished = %v, %v; want the pass stopped", wait, err)
	}
	if want := "status.acl.secretName is not set: waiting for the acl-controller (ACLReady=False PasswordMissing: user app: Secret pw not found)"; s.step.reason != v1alpha1.ReasonWaitingForACL || s.step.message != want {
		t.Errorf("progress = %s %q; want WaitingForACL %q", s.step.reason, s.step.message, want)
	}
}

// TestConfigKeysNormalised: a member's spec gets the config keys in Valkey's own
// spelling, and a member written with another spelling of the same config is not rolled.
func TestConfigKeysNormalised(t *testing.T) {
	vc := cluster(func(s *v1alpha1.ValkeyClusterSpec) {
		s.Config = map[string]string{"Cluster-Node-Timeout": "60000", "maxmemory": "1gb"}
	})
	got := desiredSpec(vc, 0).Config
	if len(got) != 2 || got["cluster-node-timeout"] != "60000" || got["maxmemory"] != "1gb" {
		t.Errorf("member config = %v, want the keys lower-cased", got)
	}
	old := desiredSpec(vc, 0)
	old.Config = map[string]string{"Cluster-Node-Timeout": "60000", "MAXMEMORY": "1gb"}
	if d := diffSpec(old, desiredSpec(vc, 0), valkey.Version{Major: 8}); d.roll || d.live {
		t.Errorf("a respelt config differs: %+v", d)
	}
}

// changeOf is a change of one field of a ValkeyNodeSpec, by path (a field of a field as
// "Persistence.Size").
type changeOf struct {
	path   string
	change func(*v1alpha1.ValkeyNodeSpec)
}

// Every field of ValkeyNodeSpec is in exactly one of these lists: what a change of it
// needs on a running member. A field added to the spec fails TestNodeSpecFieldsClassified
// until it is classified here (and, for a pod-shaping field, in podShapingFields).
var (
	// rolledFields need a new pod: diffSpec reports roll.
	rolledFields = []changeOf{
		{"WorkloadType", func(s *v1alpha1.ValkeyNodeSpec) { s.WorkloadType = v1alpha1.WorkloadDeployment }},
		{"Image", func(s *v1alpha1.ValkeyNodeSpec) { s.Image = "valkey/valkey:9.1.2" }},
		{"ImagePullSecrets", func(s *v1alpha1.ValkeyNodeSpec) {
			s.ImagePullSecrets = append(s.ImagePullSecrets, corev1.LocalObjectReference{Name: "regcred"})
		}},
		{"Resources", func(s *v1alpha1.ValkeyNodeSpec) {
			s.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
		}},
		{"Containers", func(s *v1alpha1.ValkeyNodeSpec) {
			s.Containers = append(s.Containers, corev1.Container{Name: "valkey", Env: []corev1.EnvVar{{Name: "TZ", Value: "UTC"}}})
		}},
		{"Exporter", func(s *v1alpha1.ValkeyNodeSpec) { s.Exporter.Enabled = ptr.To(false) }},
		{"Persistence.StorageClassName", func(s *v1alpha1.ValkeyNodeSpec) { s.Persistence.StorageClassName = ptr.To("fast") }},
		{"Scheduling", func(s *v1alpha1.ValkeyNodeSpec) {
			s.Scheduling = &v1alpha1.SchedulingSpec{NodeSelector: map[string]string{"disk": "ssd"}}
		}},
		{"TerminationGracePeriodSeconds", func(s *v1alpha1.ValkeyNodeSpec) { s.TerminationGracePeriodSeconds = ptr.To[int64](90) }},
		{"TLSSecretName", func(s *v1alpha1.ValkeyNodeSpec) { s.TLSSecretName = "vk-tls" }},
		{"ACLSecretName", func(s *v1alpha1.ValkeyNodeSpec) { s.ACLSecretName = "vk-acl-2" }},
		{"SystemUsersSecretName", func(s *v1alpha1.ValkeyNodeSpec) { s.SystemUsersSecretName = "vk-system-users-2" }},
		// A restart requested later than the member's pod (kubectl valkey restart).
		{"RestartedAt", func(s *v1alpha1.ValkeyNodeSpec) { s.RestartedAt = "2026-12-01T17:00:00Z" }},
	}
	// liveFields are applied on the running server or volume: diffSpec reports live only.
	// Config is live key by key: a key the server does not take with CONFIG SET rolls
	// (TestDiffSpec).
	liveFields = []changeOf{
		{"Config", func(s *v1alpha1.ValkeyNodeSpec) { s.Config = v1alpha1.Config{"maxmemory": "200mb"} }},
		{"Persistence.Size", func(s *v1alpha1.ValkeyNodeSpec) { s.Persistence.Size = resource.MustParse("2Gi") }},
		// Read by the node-controller, which keeps the claim's owner reference in line:
		// a change reaches every member without a new pod.
		{"Persistence.ReclaimPolicy", func(s *v1alpha1.ValkeyNodeSpec) { s.Persistence.ReclaimPolicy = v1alpha1.ReclaimDelete }},
	}
	// ignoredFields are never compared: diffSpec reports nothing.
	ignoredFields = []changeOf{
		// Bookkeeping: fixed at creation, or the roll's own authorisation.
		{"ClusterName", func(s *v1alpha1.ValkeyNodeSpec) { s.ClusterName = "other" }},
		{"ShardIndex", func(s *v1alpha1.ValkeyNodeSpec) { s.ShardIndex = 7 }},
		{"Revision", func(s *v1alpha1.ValkeyNodeSpec) { s.Revision++ }},
		// The scale subresource's constant 1, for the disruption controller.
		{"Replicas", func(s *v1alpha1.ValkeyNodeSpec) { s.Replicas = ptr.To[int32](2) }},
	}
)

// TestNodeSpecFieldsClassified: every field of ValkeyNodeSpec (every field of a struct
// pointer classified by its fields, as Persistence) is rolled, live or ignored, exactly
// once, and diffSpec answers for a change of it as its class says.
func TestNodeSpecFieldsClassified(t *testing.T) {
	class := map[string]string{}
	changes := map[string]changeOf{}
	for name, list := range map[string][]changeOf{"rolled": rolledFields, "live": liveFields, "ignored": ignoredFields} {
		for _, c := range list {
			if prev, dup := class[c.path]; dup {
				t.Errorf("%s is both %s and %s", c.path, prev, name)
			}
			class[c.path], changes[c.path] = name, c
		}
	}
	var fields []string
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			path := prefix + f.Name
			if _, ok := class[path]; !ok && f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct &&
				hasPrefix(class, path+".") {
				walk(path+".", f.Type.Elem())
				continue
			}
			fields = append(fields, path)
		}
	}
	walk("", reflect.TypeOf(v1alpha1.ValkeyNodeSpec{}))
	var shaping []string
	for _, f := range podShapingFields {
		shaping = append(shaping, f.path)
	}
	// RestartedAt rolls only when it is later than the member's (restartRequested).
	shaping = append(shaping, "RestartedAt")
	var rolled []string
	for _, c := range rolledFields {
		rolled = append(rolled, c.path)
	}
	slices.Sort(shaping)
	slices.Sort(rolled)
	if !slices.Equal(shaping, rolled) {
		t.Errorf("podShapingFields (update.go) compares %v, rolledFields lists %v", shaping, rolled)
	}
	seen := map[string]bool{}
	for _, path := range fields {
		seen[path] = true
		if _, ok := class[path]; !ok {
			t.Errorf("ValkeyNodeSpec.%s is not classified: add it to podShapingFields (update.go) and rolledFields "+
				"if a change of it needs a new pod, to liveFields if the running member takes it, else to ignoredFields", path)
		}
	}
	for path := range class {
		if !seen[path] {
			t.Errorf("%s is classified but is no field of ValkeyNodeSpec", path)
		}
	}

	v8 := valkey.Version{Major: 8, Minor: 0, Patch: 1}
	base := desiredSpec(cluster(func(s *v1alpha1.ValkeyClusterSpec) {
		s.Config = map[string]string{"maxmemory": "100mb"}
		s.Persistence = &v1alpha1.PersistenceSpec{Size: resource.MustParse("1Gi")}
	}), 0)
	base.Revision = 1
	for path, c := range changes {
		t.Run(path, func(t *testing.T) {
			next := *base.DeepCopy()
			c.change(&next)
			if reflect.DeepEqual(next, base) {
				t.Fatalf("the test's change of %s changes nothing", path)
			}
			d := diffSpec(base, next, v8)
			want := specDiff{live: class[path] == "live", roll: class[path] == "rolled"}
			if d.live != want.live || d.roll != want.roll {
				t.Errorf("a change of %s (%s): diff = %+v, want live=%v roll=%v", path, class[path], d, want.live, want.roll)
			}
		})
	}
}

func hasPrefix(set map[string]string, prefix string) bool {
	for k := range set {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

func TestRestartedAt(t *testing.T) {
	ann := map[string]string{
		v1alpha1.AnnotationRestartedAt:         "2026-12-01T10:00:00Z",
		v1alpha1.AnnotationRestartedAtShard(1): "2026-12-01T11:00:00+01:00", // 10:00 UTC: not later
		v1alpha1.AnnotationRestartedAtShard(2): "2026-12-01T12:00:00Z",
		v1alpha1.AnnotationRestartedAtShard(3): "yesterday",
	}
	for sh, want := range map[int32]string{0: "2026-12-01T10:00:00Z", 1: "2026-12-01T10:00:00Z", 2: "2026-12-01T12:00:00Z", 3: "2026-12-01T10:00:00Z"} {
		if got := restartedAt(ann, sh); got != want {
			t.Errorf("shard %d: restartedAt = %q, want %q", sh, got, want)
		}
	}
	if got := restartedAt(nil, 0); got != "" {
		t.Errorf("no annotation: restartedAt = %q, want none", got)
	}
	for _, c := range []struct {
		have, want string
		roll       bool
	}{
		{"", "2026-12-01T10:00:00Z", true},
		{"2026-12-01T09:00:00Z", "2026-12-01T10:00:00Z", true},
		{"2026-12-01T10:00:00Z", "2026-12-01T10:00:00Z", false},
		{"2026-12-01T11:00:00Z", "2026-12-01T10:00:00Z", false}, // an older request
		{"2026-12-01T10:00:00Z", "", false},                     // the annotation removed
	} {
		if got := restartRequested(c.have, c.want); got != c.roll {
			t.Errorf("restartRequested(%q, %q) = %v, want %v", c.have, c.want, got, c.roll)
		}
	}
}
