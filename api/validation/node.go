package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/valkey-operator/valkey-operator/api/memberpod"
	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// ValidateNode runs the rules of a ValkeyNode on its own. The cluster-controller
// derives a node's spec from a validated ValkeyCluster, so these rules catch a bug or
// a hand-written object, not a user's typo. The key table's checks of spec.config are
// the cluster's (ConfigTableErrors): a node carries its cluster's config, which an
// update of the cluster may keep although the table refuses it (ValidateClusterUpdate),
// and the node of a new member must then be admitted with it.
func ValidateNode(n *v1alpha1.ValkeyNode) field.ErrorList {
	if n == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "a ValkeyNode is required")}
	}
	return validateNodeSpec(&n.Spec, specPath)
}

// ValidateNodeUpdate runs ValidateNode on the new object and the rules that compare it
// with the stored one: the cluster and the workload type are fixed, and so is the
// volume (present or not, its class), except that it may grow.
func ValidateNodeUpdate(old, n *v1alpha1.ValkeyNode) field.ErrorList {
	errs := ValidateNode(n)
	if old == nil || n == nil {
		return errs
	}
	p := specPath
	if old.Spec.ClusterName != n.Spec.ClusterName {
		errs = append(errs, field.Invalid(p.Child("clusterName"), n.Spec.ClusterName,
			fmt.Sprintf("is immutable (was %s)", old.Spec.ClusterName)))
	}
	errs = append(errs, validateWorkloadTypeUpdate(old.Spec.WorkloadType, n.Spec.WorkloadType, p.Child("workloadType"))...)
	errs = append(errs, validatePersistenceUpdate(old.Spec.Persistence, n.Spec.Persistence, p.Child("persistence"))...)
	return errs
}

// validateNodeSpec runs the rules of every part of a node's spec.
func validateNodeSpec(s *v1alpha1.ValkeyNodeSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateNodeIdentity(s, p)...)
	errs = append(errs, validateWorkloadType(s.WorkloadType, true, p.Child("workloadType"))...)
	errs = append(errs, validateImage(s.Image, true, p.Child("image"))...)
	errs = append(errs, validateImagePullSecrets(s.ImagePullSecrets, p.Child("imagePullSecrets"))...)
	errs = append(errs, validateResources(s.Resources, p.Child("resources"))...)
	errs = append(errs, validateConfig(s.Config, p.Child("config"))...)
	errs = append(errs, validateContainers(memberpod.NodeInput(s), p.Child("containers"))...)
	errs = append(errs, validateExporter(s.Exporter, p.Child("exporter"))...)
	errs = append(errs, validatePersistence(s.Persistence, s.WorkloadType, p.Child("persistence"))...)
	errs = append(errs, validateScheduling(s.Scheduling, p.Child("scheduling"))...)
	errs = append(errs, validateGracePeriod(s.TerminationGracePeriodSeconds, p.Child("terminationGracePeriodSeconds"))...)
	errs = append(errs, validateSecretName(s.TLSSecretName, false, p.Child("tlsSecretName"))...)
	errs = append(errs, validateSecretName(s.ACLSecretName, false, p.Child("aclSecretName"))...)
	errs = append(errs, validateSecretName(s.SystemUsersSecretName, false, p.Child("systemUsersSecretName"))...)
	return errs
}

// validateNodeIdentity checks the fields that tie a node to its cluster and shard.
func validateNodeIdentity(s *v1alpha1.ValkeyNodeSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.ClusterName == "" {
		errs = append(errs, field.Required(p.Child("clusterName"), "the ValkeyCluster this member belongs to"))
	} else {
		for _, msg := range validation.IsDNS1035Label(s.ClusterName) {
			errs = append(errs, field.Invalid(p.Child("clusterName"), s.ClusterName, msg))
		}
	}
	if s.ShardIndex < 0 || s.ShardIndex >= MaxShards {
		errs = append(errs, field.Invalid(p.Child("shardIndex"), s.ShardIndex,
			fmt.Sprintf("must be between 0 and %d", MaxShards-1)))
	}
	if s.Revision < 1 {
		errs = append(errs, field.Invalid(p.Child("revision"), s.Revision, "must be at least 1"))
	}
	return errs
}
