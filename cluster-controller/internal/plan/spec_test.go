package plan_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan/plantest"
	"github.com/valkey-operator/valkey-operator/valkey"
)

func TestDiffSpec(t *testing.T) {
	v8 := valkey.Version{Major: 8, Minor: 0, Patch: 1}
	base := plantest.Cluster(func(s *v1alpha1.ValkeyClusterSpec) {
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
			have := plan.DesiredSpec(base, 0)
			next := base.DeepCopy()
			c.mod(&next.Spec)
			d := plan.DiffSpec(have, plan.DesiredSpec(next, 0), v8)
			if d.Live != c.live || d.Roll != c.roll || strings.Join(d.Fields, ", ") != c.fields {
				t.Fatalf("diff = %+v, want live=%v roll=%v fields %q", d, c.live, c.roll, c.fields)
			}
		})
	}
}

func TestDesiredSpecAppliesDefaults(t *testing.T) {
	spec := plan.DesiredSpec(plantest.Cluster(nil), 2)
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

// TestConfigKeysNormalised: a member's spec gets the config keys in Valkey's own
// spelling, and a member written with another spelling of the same config is not rolled.
func TestConfigKeysNormalised(t *testing.T) {
	vc := plantest.Cluster(func(s *v1alpha1.ValkeyClusterSpec) {
		s.Config = map[string]string{"Cluster-Node-Timeout": "60000", "maxmemory": "1gb"}
	})
	got := plan.DesiredSpec(vc, 0).Config
	if len(got) != 2 || got["cluster-node-timeout"] != "60000" || got["maxmemory"] != "1gb" {
		t.Errorf("member config = %v, want the keys lower-cased", got)
	}
	old := plan.DesiredSpec(vc, 0)
	old.Config = map[string]string{"Cluster-Node-Timeout": "60000", "MAXMEMORY": "1gb"}
	if d := plan.DiffSpec(old, plan.DesiredSpec(vc, 0), valkey.Version{Major: 8}); d.Roll || d.Live {
		t.Errorf("a respelt config differs: %+v", d)
	}
}

// TestNodeSpecFieldsClassified: every field of ValkeyNodeSpec (every field of a struct
// pointer classified by its fields, as Persistence) is rolled, live or ignored, exactly
// once, and DiffSpec answers for a change of it as its class says.
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
	for _, f := range plan.PodShapingFields {
		shaping = append(shaping, f.Path)
	}
	// RestartedAt rolls only when it is later than the member's (RestartRequested).
	shaping = append(shaping, "RestartedAt")
	var rolled []string
	for _, c := range rolledFields {
		rolled = append(rolled, c.path)
	}
	slices.Sort(shaping)
	slices.Sort(rolled)
	if !slices.Equal(shaping, rolled) {
		t.Errorf("PodShapingFields (internal/plan/spec.go) compares %v, rolledFields lists %v", shaping, rolled)
	}
	seen := map[string]bool{}
	for _, path := range fields {
		seen[path] = true
		if _, ok := class[path]; !ok {
			t.Errorf("ValkeyNodeSpec.%s is not classified: add it to PodShapingFields (internal/plan/spec.go) and rolledFields "+
				"if a change of it needs a new pod, to liveFields if the running member takes it, else to ignoredFields", path)
		}
	}
	for path := range class {
		if !seen[path] {
			t.Errorf("%s is classified but is no field of ValkeyNodeSpec", path)
		}
	}

	v8 := valkey.Version{Major: 8, Minor: 0, Patch: 1}
	base := plan.DesiredSpec(plantest.Cluster(func(s *v1alpha1.ValkeyClusterSpec) {
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
			d := plan.DiffSpec(base, next, v8)
			want := plan.SpecDiff{Live: class[path] == "live", Roll: class[path] == "rolled"}
			if d.Live != want.Live || d.Roll != want.Roll {
				t.Errorf("a change of %s (%s): diff = %+v, want live=%v roll=%v", path, class[path], d, want.Live, want.Roll)
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
		if got := plan.RestartedAt(ann, sh); got != want {
			t.Errorf("shard %d: restartedAt = %q, want %q", sh, got, want)
		}
	}
	if got := plan.RestartedAt(nil, 0); got != "" {
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
		if got := plan.RestartRequested(c.have, c.want); got != c.roll {
			t.Errorf("restartRequested(%q, %q) = %v, want %v", c.have, c.want, got, c.roll)
		}
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
// until it is classified here (and, for a pod-shaping field, in PodShapingFields).
var (
	// rolledFields need a new pod: DiffSpec reports Roll.
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
	// liveFields are applied on the running server or volume: DiffSpec reports Live only.
	// Config is live key by key: a key the server does not take with CONFIG SET rolls
	// (TestDiffSpec).
	liveFields = []changeOf{
		{"Config", func(s *v1alpha1.ValkeyNodeSpec) { s.Config = v1alpha1.Config{"maxmemory": "200mb"} }},
		{"Persistence.Size", func(s *v1alpha1.ValkeyNodeSpec) { s.Persistence.Size = resource.MustParse("2Gi") }},
		// Read by the node-controller, which keeps the claim's owner reference in line:
		// a change reaches every member without a new pod.
		{"Persistence.ReclaimPolicy", func(s *v1alpha1.ValkeyNodeSpec) { s.Persistence.ReclaimPolicy = v1alpha1.ReclaimDelete }},
	}
	// ignoredFields are never compared: DiffSpec reports nothing.
	ignoredFields = []changeOf{
		// Bookkeeping: fixed at creation, or the roll's own authorisation.
		{"ClusterName", func(s *v1alpha1.ValkeyNodeSpec) { s.ClusterName = "other" }},
		{"ShardIndex", func(s *v1alpha1.ValkeyNodeSpec) { s.ShardIndex = 7 }},
		{"Revision", func(s *v1alpha1.ValkeyNodeSpec) { s.Revision++ }},
		// The scale subresource's constant 1, for the disruption controller.
		{"Replicas", func(s *v1alpha1.ValkeyNodeSpec) { s.Replicas = ptr.To[int32](2) }},
	}
)
