package validation

import (
	"fmt"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/valkey-operator/valkey-operator/api/memberpod"
	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// MaxClusterNameLength bounds metadata.name of a ValkeyCluster: the name is a prefix of
// the names of every object the operator creates for it (ValkeyNodes, workloads, pods,
// Services, Secrets) and the value of the app.kubernetes.io/instance label, and those
// need room for their suffixes within the 63 characters Kubernetes allows.
const MaxClusterNameLength = 40

var specPath = field.NewPath("spec")

// ValidateCluster runs every rule that applies to a ValkeyCluster on its own, at
// creation and on every later change.
func ValidateCluster(c *v1alpha1.ValkeyCluster) field.ErrorList {
	if c == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "a ValkeyCluster is required")}
	}
	errs := validateClusterName(c.Name)
	return append(errs, validateClusterSpec(&c.Spec, specPath)...)
}

// ValidateClusterUpdate runs ValidateCluster on the new object and the rules that
// compare it with the stored one (immutable fields, storage that only grows).
func ValidateClusterUpdate(old, c *v1alpha1.ValkeyCluster) field.ErrorList {
	errs := ValidateCluster(c)
	if old == nil || c == nil {
		return errs
	}
	return append(errs, validateClusterSpecUpdate(&old.Spec, &c.Spec, specPath)...)
}

// ClusterWarnings returns what is accepted but unwise in a ValkeyCluster, as sentences
// for admission warnings (kubectl prints them) and for the ConfigurationWarning
// condition.
func ClusterWarnings(c *v1alpha1.ValkeyCluster) []string {
	if c == nil {
		return nil
	}
	var warnings []string
	if w := gracePeriodWarning(&c.Spec, specPath); w != "" {
		warnings = append(warnings, w)
	}
	if w := noReplicaWarning(&c.Spec, specPath); w != "" {
		warnings = append(warnings, w)
	}
	if c.Spec.Replicas != nil {
		warnings = append(warnings, fmt.Sprintf("%s is accepted as another name for %s (the valkey-io operator's); "+
			"this operator's name is replicasPerShard", specPath.Child("replicas"), specPath.Child("replicasPerShard")))
	}
	return warnings
}

// validateClusterName checks that the name can prefix every object of the cluster.
func validateClusterName(name string) field.ErrorList {
	p := field.NewPath("metadata", "name")
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1035Label(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	if len(name) > MaxClusterNameLength {
		errs = append(errs, field.TooLong(p, name, MaxClusterNameLength))
	}
	return errs
}

// validateClusterSpec runs the rules of every part of the spec.
func validateClusterSpec(s *v1alpha1.ValkeyClusterSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateShards(s.Shards, p.Child("shards"))...)
	errs = append(errs, validateReplicasPerShard(s.ReplicasPerShard, p.Child("replicasPerShard"))...)
	errs = append(errs, validateReplicasPerShard(s.Replicas, p.Child("replicas"))...)
	errs = append(errs, validateReplicasAlias(s, p)...)
	errs = append(errs, validateWorkloadType(s.WorkloadType, false, p.Child("workloadType"))...)
	errs = append(errs, validatePDB(s.PodDisruptionBudget, p.Child("podDisruptionBudget"))...)
	errs = append(errs, validateGracePeriod(s.TerminationGracePeriodSeconds, p.Child("terminationGracePeriodSeconds"))...)
	errs = append(errs, validateImage(s.Image, false, p.Child("image"))...)
	errs = append(errs, validateServerImage(s.Image, p.Child("image"))...)
	errs = append(errs, validateImagePullSecrets(s.ImagePullSecrets, p.Child("imagePullSecrets"))...)
	errs = append(errs, validateResources(s.Resources, p.Child("resources"))...)
	errs = append(errs, validateConfig(s.Config, p.Child("config"))...)
	errs = append(errs, validateConfigForImage(s.Config, s.ImageOrDefault(), p.Child("config"))...)
	errs = append(errs, validateContainers(memberpod.ClusterInput(s), p.Child("containers"))...)
	errs = append(errs, validateExporter(s.Exporter, p.Child("exporter"))...)
	errs = append(errs, validatePersistence(s.Persistence, s.Workload(), p.Child("persistence"))...)
	errs = append(errs, validateScheduling(s.Scheduling, p.Child("scheduling"))...)
	errs = append(errs, validateTLS(s.TLS, p.Child("tls"))...)
	errs = append(errs, validateUsers(s.Users, p.Child("users"))...)
	errs = append(errs, validateNetworkPolicy(s.NetworkPolicy, p.Child("networkPolicy"))...)
	errs = append(errs, validateNetworkPolicyProfile(s.NetworkPolicy, CurrentPolicy(), p.Child("networkPolicy"))...)
	errs = append(errs, validateDataSource(s.DataSource, p.Child("dataSource"))...)
	errs = append(errs, validateExternalAccess(s.ExternalAccess, s.ImageOrDefault(), p.Child("externalAccess"))...)
	errs = append(errs, validateExternalAccessPolicy(s.ExternalAccess, CurrentPolicy(), p.Child("externalAccess"))...)
	errs = append(errs, validateMembers(s, p)...)
	errs = append(errs, validateClusterSize(s, p)...)
	return errs
}

// validateClusterSpecUpdate runs the rules that compare the new spec with the old.
func validateClusterSpecUpdate(old, s *v1alpha1.ValkeyClusterSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateWorkloadTypeUpdate(old.Workload(), s.Workload(), p.Child("workloadType"))...)
	errs = append(errs, validatePersistenceUpdate(old.Persistence, s.Persistence, p.Child("persistence"))...)
	errs = append(errs, validateTLSUpdate(old.TLS, s.TLS, p.Child("tls"))...)
	errs = append(errs, validateDataSourceUpdate(old.DataSource, s.DataSource, p.Child("dataSource"))...)
	return errs
}
