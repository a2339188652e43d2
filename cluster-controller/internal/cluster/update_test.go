package cluster

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
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
	}{
		{"nothing", func(*v1alpha1.ValkeyClusterSpec) {}, false, false},
		{"maxmemory is live", func(s *v1alpha1.ValkeyClusterSpec) { s.Config["maxmemory"] = "200mb" }, true, false},
		{"maxmemory-policy added is live", func(s *v1alpha1.ValkeyClusterSpec) { s.Config["maxmemory-policy"] = "allkeys-lru" }, true, false},
		{"appendonly rolls", func(s *v1alpha1.ValkeyClusterSpec) { s.Config["appendonly"] = "yes" }, false, true},
		{"image rolls", func(s *v1alpha1.ValkeyClusterSpec) { s.Image = "valkey/valkey:9.1.2" }, false, true},
		{"grace period rolls", func(s *v1alpha1.ValkeyClusterSpec) { s.TerminationGracePeriodSeconds = ptr.To[int64](90) }, false, true},
		{"exporter off rolls", func(s *v1alpha1.ValkeyClusterSpec) { s.Exporter.Enabled = ptr.To(false) }, false, true},
		{"volume growth is live", func(s *v1alpha1.ValkeyClusterSpec) { s.Persistence.Size = resource.MustParse("2Gi") }, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			have := desiredSpec(base, 0)
			next := base.DeepCopy()
			c.mod(&next.Spec)
			d := diffSpec(have, desiredSpec(next, 0), v8)
			if d.live != c.live || d.roll != c.roll {
				t.Fatalf("diff = %+v, want live=%v roll=%v", d, c.live, c.roll)
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

func TestDesiredSpecAppliesDefaults(t *testing.T) {
	spec := desiredSpec(cluster(nil), 2)
	if spec.ShardIndex != 2 || spec.Image != v1alpha1.DefaultImage || spec.WorkloadType != v1alpha1.WorkloadStatefulSet {
		t.Errorf("spec = %+v", spec)
	}
	if spec.Exporter.Enabled == nil || !*spec.Exporter.Enabled || spec.Exporter.Image != v1alpha1.DefaultExporterImage {
		t.Errorf("exporter = %+v", spec.Exporter)
	}
	if spec.ACLSecretName != "vk-acl" || spec.SystemUsersSecretName != "vk-system-users" {
		t.Errorf("secrets = %s %s", spec.ACLSecretName, spec.SystemUsersSecretName)
	}
	if *spec.TerminationGracePeriodSeconds != 30 {
		t.Errorf("grace = %d", *spec.TerminationGracePeriodSeconds)
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
