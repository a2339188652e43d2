package validation

import (
	"testing"

	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func TestValidateShardsAndReplicas(t *testing.T) {
	runClusterCases(t, []clusterCase{
		{name: "one shard", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Shards = 1 }},
		{name: "most shards", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Shards = MaxShards },
			policy: &Policy{MaxMembersPerCluster: 2 * MaxShards}},
		{name: "unset shards mean the default", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Shards = 0 }},
		{name: "negative shards", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Shards = -2 },
			want: []string{"spec.shards: Invalid value: -2: must be between 1 and 1000"}},
		{name: "too many shards", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Shards = MaxShards + 1 },
			want: []string{"spec.shards: Invalid value: 1001"}},
		{name: "no replicas", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.ReplicasPerShard = ptr.To[int32](0) }},
		{name: "unset replicas", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.ReplicasPerShard = nil }},
		{name: "most replicas", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.ReplicasPerShard = ptr.To[int32](MaxReplicasPerShard) }},
		{name: "negative replicas", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.ReplicasPerShard = ptr.To[int32](-1) },
			want: []string{"spec.replicasPerShard: Invalid value: -1: must be between 0 and 10"}},
		{name: "too many replicas", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.ReplicasPerShard = ptr.To[int32](11) },
			want: []string{"spec.replicasPerShard: Invalid value: 11"}},
	})
}

// The member cap counts shards x (1 + replicas), whichever name the replicas go by, and
// names the limit and where it comes from.
func TestValidateMembers(t *testing.T) {
	shape := func(shards int32, replicas *int32, alias *int32) func(c *v1alpha1.ValkeyCluster) {
		return func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Shards, c.Spec.ReplicasPerShard, c.Spec.Replicas = shards, replicas, alias
		}
	}
	runClusterCases(t, []clusterCase{
		{name: "3 x (1 + 1)", mutate: shape(3, ptr.To[int32](1), nil)},
		{name: "exactly the default cap: 50 x (1 + 1)", mutate: shape(50, ptr.To[int32](1), nil)},
		{name: "one over the default cap: 101 x (1 + 0)", mutate: shape(101, ptr.To[int32](0), nil),
			want: []string{"spec.shards: Invalid value: 101: 101 shards x (1 + 0 replicas) = 101 members, " +
				"more than this operator allows per cluster (100; policy.maxMembersPerCluster)"}},
		{name: "the issue's 1000 x (1 + 10)", mutate: shape(1000, ptr.To[int32](10), nil),
			want: []string{"spec.shards: Invalid value: 1000: 1000 shards x (1 + 10 replicas) = 11000 members, " +
				"more than this operator allows per cluster (100; policy.maxMembersPerCluster)"}},
		{name: "replicas under its other name", mutate: shape(20, nil, ptr.To[int32](5)),
			want: []string{"20 shards x (1 + 5 replicas) = 120 members"}},
		{name: "default replicas (1) count", mutate: shape(51, nil, nil),
			want: []string{"51 shards x (1 + 1 replicas) = 102 members"}},
		{name: "a higher cap admits more", mutate: shape(1000, ptr.To[int32](10), nil),
			policy: &Policy{MaxMembersPerCluster: 11000}},
		{name: "a lower cap refuses the default shape", mutate: shape(3, ptr.To[int32](1), nil),
			policy: &Policy{MaxMembersPerCluster: 5}, want: []string{"= 6 members, more than this operator allows per cluster (5;"}},
		{name: "out-of-range shards are reported by their own rule only", mutate: shape(1001, ptr.To[int32](1), nil),
			want: []string{"spec.shards: Invalid value: 1001: must be between 1 and 1000"}},
	})
}

// An existing cluster over a cap lowered since keeps its last applied spec (the guard
// heals from it); the update that brings it under the cap is admitted, one that stays
// over is refused.
func TestValidateMembersUpdate(t *testing.T) {
	withPolicy(t, Policy{MaxMembersPerCluster: 10})
	old := validCluster()
	old.Spec.Shards = 10
	for _, tc := range []struct {
		shards int32
		want   []string
	}{
		{shards: 5},
		{shards: 9, want: []string{"9 shards x (1 + 1 replicas) = 18 members"}},
	} {
		c := validCluster()
		c.Spec.Shards = tc.shards
		expectErrors(t, ValidateClusterUpdate(old, c), tc.want)
	}
}

func TestValidateWorkloadType(t *testing.T) {
	runClusterCases(t, []clusterCase{
		{name: "StatefulSet", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.WorkloadType = v1alpha1.WorkloadStatefulSet }},
		{name: "Deployment", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.WorkloadType = v1alpha1.WorkloadDeployment }},
		{name: "Pod", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.WorkloadType = v1alpha1.WorkloadPod }},
		{name: "unset", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.WorkloadType = "" }},
		{name: "unknown", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.WorkloadType = "DaemonSet" },
			want: []string{`spec.workloadType: Unsupported value: "DaemonSet": supported values: "StatefulSet", "Deployment", "Pod"`}},
		{name: "wrong case", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.WorkloadType = "statefulset" },
			want: []string{"spec.workloadType: Unsupported value"}},
	})
}

func TestValidateWorkloadTypeUpdate(t *testing.T) {
	runUpdateCases(t, []updateCase{
		{name: "unchanged"},
		{name: "unset equals the default StatefulSet", mutateNew: func(c *v1alpha1.ValkeyCluster) { c.Spec.WorkloadType = "" }},
		{name: "StatefulSet to Deployment",
			mutateNew: func(c *v1alpha1.ValkeyCluster) { c.Spec.WorkloadType = v1alpha1.WorkloadDeployment },
			want:      []string{`spec.workloadType: Invalid value: "Deployment": is immutable (was StatefulSet)`}},
		{name: "Pod to Deployment",
			mutateOld: func(c *v1alpha1.ValkeyCluster) { c.Spec.WorkloadType = v1alpha1.WorkloadPod },
			mutateNew: func(c *v1alpha1.ValkeyCluster) { c.Spec.WorkloadType = v1alpha1.WorkloadDeployment },
			want:      []string{"spec.workloadType", "is immutable (was Pod)"}},
	})
}

func TestValidatePDB(t *testing.T) {
	pdb := func(m v1alpha1.PDBMode) func(c *v1alpha1.ValkeyCluster) {
		return func(c *v1alpha1.ValkeyCluster) {
			c.Spec.PodDisruptionBudget = &v1alpha1.PodDisruptionBudgetSpec{Mode: m}
		}
	}
	runClusterCases(t, []clusterCase{
		{name: "omitted", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.PodDisruptionBudget = nil }},
		{name: "Cluster", mutate: pdb(v1alpha1.PDBCluster)},
		{name: "Disabled", mutate: pdb(v1alpha1.PDBDisabled)},
		{name: "Shard", mutate: pdb(v1alpha1.PDBShard)},
		{name: "empty mode", mutate: pdb("")},
		{name: "unknown", mutate: pdb("Zone"),
			want: []string{`spec.podDisruptionBudget.mode: Unsupported value: "Zone": supported values: "Cluster", "Disabled", "Shard"`}},
	})
}

func TestValidatePrimaryPlacement(t *testing.T) {
	placement := func(policy v1alpha1.PrimaryPlacementPolicy, key string) func(c *v1alpha1.ValkeyCluster) {
		return func(c *v1alpha1.ValkeyCluster) {
			c.Spec.PrimaryPlacement = &v1alpha1.PrimaryPlacementSpec{Policy: policy, TopologyKey: key}
		}
	}
	runClusterCases(t, []clusterCase{
		{name: "omitted"},
		{name: "Spread over zones", mutate: placement(v1alpha1.PrimaryPlacementSpread, "topology.kubernetes.io/zone")},
		{name: "Spread over nodes only", mutate: placement(v1alpha1.PrimaryPlacementSpread, "kubernetes.io/hostname")},
		{name: "a label of the user's own", mutate: placement("", "example.com/rack")},
		{name: "None", mutate: placement(v1alpha1.PrimaryPlacementNone, "")},
		{name: "unknown policy", mutate: placement("Pack", ""),
			want: []string{`spec.primaryPlacement.policy: Unsupported value: "Pack": supported values: "Spread", "None"`}},
		{name: "not a label key", mutate: placement("", "rack zone"),
			want: []string{`spec.primaryPlacement.topologyKey: Invalid value: "rack zone": name part must consist of alphanumeric characters`}},
		{name: "prefix not a DNS subdomain", mutate: placement("", "Example_Com/rack"),
			want: []string{"spec.primaryPlacement.topologyKey", "prefix part"}},
	})
}

func TestValidateGracePeriod(t *testing.T) {
	grace := func(s int64) func(c *v1alpha1.ValkeyCluster) {
		return func(c *v1alpha1.ValkeyCluster) { c.Spec.TerminationGracePeriodSeconds = ptr.To(s) }
	}
	runClusterCases(t, []clusterCase{
		{name: "omitted"},
		{name: "one second (short, a warning only)", mutate: grace(1)},
		{name: "sixty seconds", mutate: grace(60)},
		{name: "zero", mutate: grace(0),
			want: []string{"spec.terminationGracePeriodSeconds: Invalid value: 0: must be a positive number of seconds"}},
		{name: "negative", mutate: grace(-5), want: []string{"spec.terminationGracePeriodSeconds"}},
	})
}
