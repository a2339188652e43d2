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

// ValidateCluster runs every rule that applies to a ValkeyCluster on its own: the
// admission of a new cluster. It is ValidateStoredCluster and ConfigTableErrors.
func ValidateCluster(c *v1alpha1.ValkeyCluster) field.ErrorList {
	return append(ValidateStoredCluster(c), ConfigTableErrors(c)...)
}

// ValidateStoredCluster runs the rules a cluster must keep for the controllers to act
// on it (the guard): every rule of ValidateCluster but the key table's. The key table
// grows and changes with the operator, so a cluster an older operator admitted may hold
// an entry the current table refuses, which its servers run with; ConfigTableWarnings
// reports those.
func ValidateStoredCluster(c *v1alpha1.ValkeyCluster) field.ErrorList {
	if c == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "a ValkeyCluster is required")}
	}
	errs := validateClusterName(c.Name)
	return append(errs, validateClusterSpec(&c.Spec, specPath)...)
}

// ConfigTableErrors checks spec.config against the key table measured on the real
// servers: keys no supported Valkey takes (unless Policy.AllowedConfigKeys admits
// them), values of the wrong type, and keys or values the Valkey of spec.image lacks.
func ConfigTableErrors(c *v1alpha1.ValkeyCluster) field.ErrorList {
	if c == nil {
		return nil
	}
	return validateConfigTable(c.Spec.Config, c.Spec.ImageOrDefault(), specPath.Child("config"))
}

// ValidateClusterUpdate runs the rules of ValidateCluster on the new object, the key
// table's on the config entries the update changes only (ratcheting, as Kubernetes does
// for CRD schemas: see changedConfig), and the rules that compare it with the stored
// one (immutable fields, storage that only grows).
func ValidateClusterUpdate(old, c *v1alpha1.ValkeyCluster) field.ErrorList {
	if old == nil || c == nil {
		return ValidateCluster(c)
	}
	errs := ValidateStoredCluster(c)
	errs = append(errs, validateConfigTable(changedConfig(old, c), c.Spec.ImageOrDefault(), specPath.Child("config"))...)
	return append(errs, validateClusterSpecUpdate(&old.Spec, &c.Spec, specPath)...)
}

// ClusterUpdateWarnings returns ClusterWarnings of the new object and, as warnings, what
// the key table refuses among the config entries the update keeps as they were (which
// ValidateClusterUpdate admits).
func ClusterUpdateWarnings(old, c *v1alpha1.ValkeyCluster) []string {
	warnings := ClusterWarnings(c)
	if old == nil || c == nil {
		return warnings
	}
	kept := unchangedConfig(old, c)
	return append(warnings, configTableWarnings(validateConfigTable(kept, c.Spec.ImageOrDefault(), specPath.Child("config")))...)
}

// ConfigTableWarnings returns ConfigTableErrors as warnings: the guard reports them for
// a stored cluster instead of stopping the controllers.
func ConfigTableWarnings(c *v1alpha1.ValkeyCluster) []string {
	return configTableWarnings(ConfigTableErrors(c))
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
	if w := privateKeySizeWarning(c.Spec.TLS, specPath.Child("tls")); w != "" {
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
	errs = append(errs, validateContainers(memberpod.ClusterInput(s), p.Child("containers"))...)
	errs = append(errs, validateExporter(s.Exporter, p.Child("exporter"))...)
	errs = append(errs, validatePersistence(s.Persistence, s.Workload(), p.Child("persistence"))...)
	errs = append(errs, validateScheduling(s.Scheduling, p.Child("scheduling"))...)
	errs = append(errs, validatePrimaryPlacement(s.PrimaryPlacement, p.Child("primaryPlacement"))...)
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
