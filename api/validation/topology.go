package validation

import (
	"fmt"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkeyconf"
)

// Sanity bounds of the cluster's size. A Valkey cluster has 16384 slots and its
// gossip grows with the square of the member count; beyond these numbers a typo is
// far more likely than an intent.
const (
	// MaxShards is the largest spec.shards accepted.
	MaxShards = 1000
	// MaxReplicasPerShard is the largest spec.replicasPerShard accepted.
	MaxReplicasPerShard = 10
)

// workloadTypes are the supported values of workloadType.
var workloadTypes = []v1alpha1.WorkloadType{
	v1alpha1.WorkloadStatefulSet, v1alpha1.WorkloadDeployment, v1alpha1.WorkloadPod,
}

// pdbModes are the supported values of podDisruptionBudget.mode.
var pdbModes = []v1alpha1.PDBMode{v1alpha1.PDBCluster, v1alpha1.PDBDisabled, v1alpha1.PDBShard}

// validateShards checks spec.shards; 0 means unset (the default applies).
func validateShards(shards int32, p *field.Path) field.ErrorList {
	if shards < 0 || shards > MaxShards {
		return field.ErrorList{field.Invalid(p, shards, fmt.Sprintf("must be between 1 and %d", MaxShards))}
	}
	return nil
}

// validateReplicasPerShard checks spec.replicasPerShard; nil means unset.
func validateReplicasPerShard(replicas *int32, p *field.Path) field.ErrorList {
	if replicas == nil {
		return nil
	}
	if *replicas < 0 || *replicas > MaxReplicasPerShard {
		return field.ErrorList{field.Invalid(p, *replicas, fmt.Sprintf("must be between 0 and %d", MaxReplicasPerShard))}
	}
	return nil
}

// validateMembers refuses a cluster of more members than the operator's policy allows:
// each member is a ValkeyNode, a workload, a ConfigMap and a pod. The shards and
// replicas checks report values out of their own ranges.
func validateMembers(s *v1alpha1.ValkeyClusterSpec, p *field.Path) field.ErrorList {
	shards, replicas := int64(s.ShardCount()), int64(s.ReplicaCount())
	if shards < 1 || shards > MaxShards || replicas < 0 || replicas > MaxReplicasPerShard {
		return nil
	}
	members, limit := shards*(1+replicas), int64(CurrentPolicy().MembersPerCluster())
	if members <= limit {
		return nil
	}
	return field.ErrorList{field.Invalid(p.Child("shards"), s.ShardCount(), fmt.Sprintf(
		"%d shards x (1 + %d replicas) = %d members, more than this operator allows per cluster (%d; policy.maxMembersPerCluster)",
		shards, replicas, members, limit))}
}

// validateReplicasAlias refuses replicas and replicasPerShard set to different values.
func validateReplicasAlias(s *v1alpha1.ValkeyClusterSpec, p *field.Path) field.ErrorList {
	if s.Replicas == nil || s.ReplicasPerShard == nil || *s.Replicas == *s.ReplicasPerShard {
		return nil
	}
	return field.ErrorList{field.Invalid(p.Child("replicas"), *s.Replicas, fmt.Sprintf(
		"is another name for replicasPerShard, which is %d: set one, or both to the same value", *s.ReplicasPerShard))}
}

// validateWorkloadType checks a workload type against the supported values; an empty
// value is accepted unless required (it then means StatefulSet).
func validateWorkloadType(w v1alpha1.WorkloadType, required bool, p *field.Path) field.ErrorList {
	if w == "" {
		if required {
			return field.ErrorList{field.Required(p, "one of StatefulSet, Deployment or Pod")}
		}
		return nil
	}
	for _, known := range workloadTypes {
		if w == known {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(p, w, workloadTypes)}
}

// validateWorkloadTypeUpdate refuses any change of the workload type.
func validateWorkloadTypeUpdate(old, w v1alpha1.WorkloadType, p *field.Path) field.ErrorList {
	if old == w {
		return nil
	}
	return field.ErrorList{field.Invalid(p, w, fmt.Sprintf("is immutable (was %s); create a new cluster to change it", old))}
}

// validatePDB checks the disruption budget mode.
func validatePDB(pdb *v1alpha1.PodDisruptionBudgetSpec, p *field.Path) field.ErrorList {
	if pdb == nil || pdb.Mode == "" {
		return nil
	}
	for _, known := range pdbModes {
		if pdb.Mode == known {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(p.Child("mode"), pdb.Mode, pdbModes)}
}

// placementPolicies are the supported values of primaryPlacement.policy.
var placementPolicies = []v1alpha1.PrimaryPlacementPolicy{v1alpha1.PrimaryPlacementSpread, v1alpha1.PrimaryPlacementNone}

// validatePrimaryPlacement checks the policy and that the topology key is a label key
// a node can carry.
func validatePrimaryPlacement(pp *v1alpha1.PrimaryPlacementSpec, p *field.Path) field.ErrorList {
	if pp == nil {
		return nil
	}
	var errs field.ErrorList
	if pp.Policy != "" {
		known := false
		for _, v := range placementPolicies {
			known = known || pp.Policy == v
		}
		if !known {
			errs = append(errs, field.NotSupported(p.Child("policy"), pp.Policy, placementPolicies))
		}
	}
	if pp.TopologyKey != "" {
		errs = append(errs, metav1validation.ValidateLabelName(pp.TopologyKey, p.Child("topologyKey"))...)
	}
	return errs
}

// validateGracePeriod checks that an explicit grace period is positive.
func validateGracePeriod(seconds *int64, p *field.Path) field.ErrorList {
	if seconds != nil && *seconds <= 0 {
		return field.ErrorList{field.Invalid(p, *seconds, "must be a positive number of seconds")}
	}
	return nil
}

// gracePeriodWarning explains an explicit grace period shorter than a primary's
// failover needs; it is empty when there is nothing to say.
func gracePeriodWarning(s *v1alpha1.ValkeyClusterSpec, p *field.Path) string {
	if s.TerminationGracePeriodSeconds == nil {
		return ""
	}
	if raw, ok := valkeyconf.Lookup(s.Config, valkeyconf.KeyManualFailoverTimeout); ok {
		if _, _, ok := valkeyconf.CheckBound(valkeyconf.KeyManualFailoverTimeout, raw); !ok {
			return "" // validateConfig reports the value itself
		}
	}
	short, minimum := GracePeriodTooShort(s)
	if !short {
		return ""
	}
	return fmt.Sprintf("%s: %d s is shorter than the %d s a primary may need to hand its slots to a replica "+
		"(%s/1000 + %d s); a primary stopped by Kubernetes may be killed before its failover completes",
		p.Child("terminationGracePeriodSeconds"), *s.TerminationGracePeriodSeconds, minimum,
		valkeyconf.KeyManualFailoverTimeout, valkeyconf.GracePeriodHeadroomSeconds)
}

// noReplicaWarning explains the risk of shards without replicas and without volumes.
func noReplicaWarning(s *v1alpha1.ValkeyClusterSpec, p *field.Path) string {
	if s.ReplicaCount() != 0 || s.Persistence != nil {
		return ""
	}
	return fmt.Sprintf("%s: 0 without persistence: a shard whose only pod is lost loses its data",
		p.Child("replicasPerShard"))
}
