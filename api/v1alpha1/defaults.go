package v1alpha1

import "strings"

// Defaults of the API, applied by the CRD schema on write and by these accessors for
// objects that were created before a default existed or built in code.
const (
	DefaultShards           = 3
	DefaultReplicasPerShard = 1
	DefaultImage            = "valkey/valkey:8.0.1"
	DefaultExporterImage    = "oliver006/redis_exporter:v1.86.0"
	// DefaultPlacementTopologyKey is spec.primaryPlacement.topologyKey's default.
	DefaultPlacementTopologyKey = "topology.kubernetes.io/zone"
)

// ShardCount returns spec.shards with its default.
func (s *ValkeyClusterSpec) ShardCount() int32 {
	if s.Shards == 0 {
		return DefaultShards
	}
	return s.Shards
}

// ReplicaCount returns spec.replicasPerShard, or its other name spec.replicas, with the
// default.
func (s *ValkeyClusterSpec) ReplicaCount() int32 {
	switch {
	case s.ReplicasPerShard != nil:
		return *s.ReplicasPerShard
	case s.Replicas != nil:
		return *s.Replicas
	}
	return DefaultReplicasPerShard
}

// Workload returns spec.workloadType with its default.
func (s *ValkeyClusterSpec) Workload() WorkloadType {
	if s.WorkloadType == "" {
		return WorkloadStatefulSet
	}
	return s.WorkloadType
}

// PDB returns the disruption budget mode with its default.
func (s *ValkeyClusterSpec) PDB() PDBMode {
	if s.PodDisruptionBudget == nil || s.PodDisruptionBudget.Mode == "" {
		return PDBCluster
	}
	return s.PodDisruptionBudget.Mode
}

// PlacementPolicy returns spec.primaryPlacement.policy with its default.
func (s *ValkeyClusterSpec) PlacementPolicy() PrimaryPlacementPolicy {
	if s.PrimaryPlacement == nil || s.PrimaryPlacement.Policy == "" {
		return PrimaryPlacementSpread
	}
	return s.PrimaryPlacement.Policy
}

// PlacementTopologyKey returns spec.primaryPlacement.topologyKey with its default.
func (s *ValkeyClusterSpec) PlacementTopologyKey() string {
	if s.PrimaryPlacement == nil || s.PrimaryPlacement.TopologyKey == "" {
		return DefaultPlacementTopologyKey
	}
	return s.PrimaryPlacement.TopologyKey
}

// ImageOrDefault returns spec.image with its default.
func (s *ValkeyClusterSpec) ImageOrDefault() string {
	if s.Image == "" {
		return DefaultImage
	}
	return s.Image
}

// ImageOrDefault returns the exporter image with its default.
func (e ExporterSpec) ImageOrDefault() string {
	if e.Image == "" {
		return DefaultExporterImage
	}
	return e.Image
}

// IsEnabled reports whether the exporter runs (default true).
func (e ExporterSpec) IsEnabled() bool { return e.Enabled == nil || *e.Enabled }

// ReclaimPolicyOrDefault returns the reclaim policy with its default.
func (p *PersistenceSpec) ReclaimPolicyOrDefault() ReclaimPolicy {
	if p.ReclaimPolicy == "" {
		return ReclaimRetain
	}
	return p.ReclaimPolicy
}

// NetworkPolicyEnabled returns spec.networkPolicy.enabled, or def when the spec leaves
// it unset (the operator's default, a flag of the cluster-controller).
func (s *ValkeyClusterSpec) NetworkPolicyEnabled(def bool) bool {
	if s.NetworkPolicy == nil || s.NetworkPolicy.Enabled == nil {
		return def
	}
	return *s.NetworkPolicy.Enabled
}

// ExternalAccessType returns spec.externalAccess.type, None when unset.
func (s *ValkeyClusterSpec) ExternalAccessType() ExternalAccessType {
	if s.ExternalAccess == nil || s.ExternalAccess.Type == "" {
		return ExternalAccessNone
	}
	return s.ExternalAccess.Type
}

// ExternalAccessEnabled reports whether the members get per-member Services.
func (s *ValkeyClusterSpec) ExternalAccessEnabled() bool {
	return s.ExternalAccessType() != ExternalAccessNone
}

// Hostname renders the hostname template for one member ("" without a template).
func (e *ExternalAccessSpec) Hostname(member, cluster, namespace string) string {
	if e == nil || e.HostnameTemplate == "" {
		return ""
	}
	return strings.NewReplacer("{member}", member, "{cluster}", cluster, "{namespace}", namespace).Replace(e.HostnameTemplate)
}

// HostnamePattern is the name a certificate must cover for every member's hostname: the
// template with {member} as a wildcard label ("*.valkey.example.com"), since members'
// names are chosen when they are created. "" without a template.
func (e *ExternalAccessSpec) HostnamePattern(cluster, namespace string) string {
	return e.Hostname("*", cluster, namespace)
}

// KindOrDefault is the issuer's kind, Issuer when unset.
func (r *IssuerRef) KindOrDefault() IssuerKind {
	if r.Kind == "" {
		return IssuerKindIssuer
	}
	return r.Kind
}

// GroupOrDefault is the issuer's API group, cert-manager.io when unset.
func (r *IssuerRef) GroupOrDefault() string {
	if r.Group == "" {
		return CertManagerGroup
	}
	return r.Group
}
