package validation

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func TestValidateClusterAcceptsReferenceManifests(t *testing.T) {
	for name, c := range map[string]*v1alpha1.ValkeyCluster{
		"minimal":                   validCluster(),
		"seed sample":               seedSample(),
		"unset fields use defaults": {Spec: v1alpha1.ValkeyClusterSpec{}},
	} {
		t.Run(name, func(t *testing.T) {
			if c.Name == "" {
				c.Name = "defaults"
			}
			expectErrors(t, ValidateCluster(c), nil)
		})
	}
}

func TestValidateClusterNil(t *testing.T) {
	if errs := ValidateCluster(nil); len(errs) != 1 {
		t.Fatalf("want one error for a nil cluster, got %v", errs)
	}
}

func TestValidateClusterName(t *testing.T) {
	runClusterCases(t, []clusterCase{
		{name: "short lowercase name", mutate: func(c *v1alpha1.ValkeyCluster) { c.Name = "cache-1" }},
		{name: "longest name", mutate: func(c *v1alpha1.ValkeyCluster) { c.Name = strings.Repeat("a", MaxClusterNameLength) }},
		{name: "too long", mutate: func(c *v1alpha1.ValkeyCluster) { c.Name = strings.Repeat("a", MaxClusterNameLength+1) },
			want: []string{"metadata.name: Too long"}},
		{name: "starts with a digit", mutate: func(c *v1alpha1.ValkeyCluster) { c.Name = "1cache" },
			want: []string{"metadata.name: Invalid value"}},
		{name: "has a dot", mutate: func(c *v1alpha1.ValkeyCluster) { c.Name = "my.cache" },
			want: []string{"metadata.name: Invalid value"}},
	})
}

func TestValidateClusterCollectsEveryError(t *testing.T) {
	c := validCluster()
	c.Spec.Shards = -1
	c.Spec.WorkloadType = "Job"
	c.Spec.Users = []v1alpha1.UserSpec{{Name: "_x", NoPass: true}}
	expectErrors(t, ValidateCluster(c), []string{"spec.shards", "spec.workloadType", "spec.users[0].name"})
}

func TestValidateClusterUpdateAllowsScaling(t *testing.T) {
	runUpdateCases(t, []updateCase{
		{name: "shards up", mutateNew: func(c *v1alpha1.ValkeyCluster) { c.Spec.Shards = 6 }},
		{name: "shards down", mutateOld: func(c *v1alpha1.ValkeyCluster) { c.Spec.Shards = 6 }},
		{name: "replicas up", mutateNew: func(c *v1alpha1.ValkeyCluster) { c.Spec.ReplicasPerShard = ptr.To[int32](3) }},
		{name: "replicas down to zero", mutateNew: func(c *v1alpha1.ValkeyCluster) { c.Spec.ReplicasPerShard = ptr.To[int32](0) }},
		{name: "image change", mutateNew: func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = "valkey/valkey:8.1.0" }},
		{name: "users change", mutateNew: withUser(func(*v1alpha1.UserSpec) {})},
		{name: "new object still validated", mutateNew: func(c *v1alpha1.ValkeyCluster) { c.Spec.Shards = -1 },
			want: []string{"spec.shards"}},
	})
}

func TestValidateClusterUpdateNil(t *testing.T) {
	expectErrors(t, ValidateClusterUpdate(nil, validCluster()), nil)
}

func TestClusterWarnings(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(c *v1alpha1.ValkeyCluster)
		want   []string
	}{
		{name: "defaults", mutate: func(*v1alpha1.ValkeyCluster) {}},
		{name: "seed sample", mutate: func(c *v1alpha1.ValkeyCluster) { *c = *seedSample() }},
		{name: "grace period at the minimum",
			mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.TerminationGracePeriodSeconds = ptr.To[int64](15) }},
		{name: "grace period below the default minimum",
			mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.TerminationGracePeriodSeconds = ptr.To[int64](14) },
			want:   []string{"spec.terminationGracePeriodSeconds: 14 s is shorter than the 15 s"}},
		{name: "grace period below a raised failover timeout", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Image = "valkey/valkey:8.1.1"
			c.Spec.Config = map[string]string{"cluster-manual-failover-timeout": "60000"}
			c.Spec.TerminationGracePeriodSeconds = ptr.To[int64](60)
		}, want: []string{"60 s is shorter than the 70 s"}},
		{name: "unparsable failover timeout gives no warning (it is an error)", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Config = map[string]string{"cluster-manual-failover-timeout": "soon"}
			c.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
		}},
		{name: "no replicas without persistence",
			mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.ReplicasPerShard = ptr.To[int32](0) },
			want:   []string{"spec.replicasPerShard: 0 without persistence"}},
		{name: "no replicas with persistence", mutate: func(c *v1alpha1.ValkeyCluster) {
			*c = *seedSample()
			c.Spec.ReplicasPerShard = ptr.To[int32](0)
		}},
		{name: "replicas, the valkey-io operator's name", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.ReplicasPerShard, c.Spec.Replicas = nil, ptr.To[int32](2)
		}, want: []string{"spec.replicas is accepted as another name for spec.replicasPerShard"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validCluster()
			tc.mutate(c)
			got := strings.Join(ClusterWarnings(c), "\n")
			if len(tc.want) == 0 && got != "" {
				t.Fatalf("want no warning, got %q", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("want a warning containing %q, got %q", w, got)
				}
			}
		})
	}
	if ClusterWarnings(nil) != nil {
		t.Error("want no warning for a nil cluster")
	}
}

func TestReplicasAlias(t *testing.T) {
	runClusterCases(t, []clusterCase{
		{name: "replicas alone", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.ReplicasPerShard, c.Spec.Replicas = nil, ptr.To[int32](2) }},
		{name: "both, the same", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.ReplicasPerShard, c.Spec.Replicas = ptr.To[int32](2), ptr.To[int32](2)
		}},
		{name: "both, different", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Replicas = ptr.To[int32](2) },
			want: []string{"spec.replicas: Invalid value: 2: is another name for replicasPerShard, which is 1"}},
		{name: "replicas out of range", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.ReplicasPerShard, c.Spec.Replicas = nil, ptr.To[int32](11) },
			want: []string{"spec.replicas: Invalid value: 11: must be between 0 and 10"}},
	})
	for _, tc := range []struct {
		perShard, replicas *int32
		want               int32
	}{{nil, nil, 1}, {ptr.To[int32](0), nil, 0}, {nil, ptr.To[int32](3), 3}, {ptr.To[int32](2), ptr.To[int32](2), 2}} {
		s := v1alpha1.ValkeyClusterSpec{ReplicasPerShard: tc.perShard, Replicas: tc.replicas}
		if got := s.ReplicaCount(); got != tc.want {
			t.Errorf("ReplicaCount(%v, %v) = %d, want %d", tc.perShard, tc.replicas, got, tc.want)
		}
	}
}
