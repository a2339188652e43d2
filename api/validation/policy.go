package validation

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valkey-operator/valkey-operator/valkeyconf"
)

// Defaults of the policy: what a component applies when the administrator sets nothing
// (internal/operator.PolicyFlags registers them as the flags' defaults).
const (
	// DefaultMaxMembersPerCluster caps shards x (1 + replicasPerShard) of one cluster.
	// Every member costs the operator a ValkeyNode, a workload, a ConfigMap and a pod,
	// each carrying a copy of the cluster's config and container patches.
	DefaultMaxMembersPerCluster = 100
	// DefaultMinBackupInterval is the least time between two backups of a schedule.
	DefaultMinBackupInterval = 5 * time.Minute
	// MinBackupIntervalFloor is the smallest minimum an administrator may set.
	MinBackupIntervalFloor = time.Minute
)

// Policy is what an administrator allows beyond the defaults. Every component (the
// webhooks and each controller's guard) must run with the same policy, so they agree on
// which specs are valid: the chart passes the same flags to all of them
// (internal/operator.PolicyFlags). The zero Policy is the defaults.
type Policy struct {
	// RefuseSidecars refuses every spec.containers entry that is not a patch of the
	// operator's own containers. Sidecars share the pod's network namespace, so they
	// reach the server's unauthenticated cluster bus on localhost.
	RefuseSidecars bool
	// AllowedModules are the module paths (shipped in the image) that spec.config
	// loadmodule may name. Empty: loadmodule is refused.
	AllowedModules []string
	// AllowedConfigKeys are configuration keys that no supported Valkey takes (the
	// measured key table, valkeyconf.Known) and that spec.config may set all the same:
	// the keys of a newer Valkey that the administrator's images run. Their values are
	// not checked; the keys the operator refuses stay refused.
	AllowedConfigKeys []string
	// MaxMembersPerCluster caps shards x (1 + replicasPerShard) of one cluster.
	// 0 (or less): DefaultMaxMembersPerCluster; there is no "no limit".
	MaxMembersPerCluster int
	// MinBackupInterval is the least time between two consecutive backups of a
	// ValkeyBackupSchedule. 0 (or less): DefaultMinBackupInterval.
	MinBackupInterval time.Duration
	// ObjectStore decides which object-store endpoints a spec may name.
	ObjectStore EndpointPolicy
	// Profile sets defaults for one kind of installation (ProfileMultiTenant refuses
	// sidecars, turns the empty external access allow-lists into "none" and keeps
	// every cluster's NetworkPolicy). Empty: ProfileDefault.
	Profile Profile
	// ExternalAccess decides what spec.externalAccess may ask for.
	ExternalAccess ExternalAccessPolicy
}

var policy atomic.Pointer[Policy]

// SetPolicy sets the policy every later validation applies (at start-up, from flags).
func SetPolicy(p Policy) {
	p.AllowedModules = slices.Clone(p.AllowedModules)
	p.AllowedConfigKeys = slices.Clone(p.AllowedConfigKeys)
	p.ObjectStore = p.ObjectStore.clone()
	p.ExternalAccess = p.ExternalAccess.clone()
	policy.Store(&p)
}

// CurrentPolicy is the policy in force: the defaults (sidecars allowed, no module, at
// most 100 members per cluster, backups at least 5 minutes apart, no endpoint
// allow-list) until SetPolicy is called.
func CurrentPolicy() Policy {
	if p := policy.Load(); p != nil {
		return *p
	}
	return Policy{}
}

// MembersPerCluster is the member cap in force.
func (p Policy) MembersPerCluster() int {
	if p.MaxMembersPerCluster <= 0 {
		return DefaultMaxMembersPerCluster
	}
	return p.MaxMembersPerCluster
}

// BackupInterval is the least time between two backups of a schedule.
func (p Policy) BackupInterval() time.Duration {
	if p.MinBackupInterval <= 0 {
		return DefaultMinBackupInterval
	}
	return p.MinBackupInterval
}

// moduleAllowed reports whether a loadmodule value names an allowed module path (its
// first word; the rest are the module's arguments).
func (p Policy) moduleAllowed(value string) bool {
	fields := strings.Fields(value)
	return len(fields) > 0 && slices.Contains(p.AllowedModules, fields[0])
}

// configKeyAllowed reports whether the administrator admits key (normalised), which no
// supported Valkey takes.
func (p Policy) configKeyAllowed(key string) bool {
	return slices.Contains(p.AllowedConfigKeys, key)
}

// FlagAllowedConfigKeys is the flag that sets Policy.AllowedConfigKeys in every
// component.
const FlagAllowedConfigKeys = "allowed-config-keys"

// ParseConfigKeys splits a comma-separated list of configuration keys, normalised,
// refusing malformed names and the keys the operator refuses in every spec.
func ParseConfigKeys(s string) ([]string, error) {
	var out []string
	for _, k := range splitList(s) {
		if !valkeyconf.ValidName(k) {
			return nil, fmt.Errorf("--%s: %q is not a configuration name", FlagAllowedConfigKeys, k)
		}
		if r, refused := valkeyconf.Refused(k); refused {
			return nil, fmt.Errorf("--%s: %q is refused in every spec, whatever the version: %s", FlagAllowedConfigKeys, k, r.Why)
		}
		out = append(out, valkeyconf.Normalize(k))
	}
	return out, nil
}

// ParseModules splits a comma-separated list of module paths, refusing relative ones.
func ParseModules(s string) ([]string, error) {
	var out []string
	for _, m := range splitList(s) {
		if !strings.HasPrefix(m, "/") || strings.Contains(m, "..") {
			return nil, errModulePath(m)
		}
		out = append(out, m)
	}
	return out, nil
}

type errModulePath string

func (e errModulePath) Error() string {
	return "module path " + string(e) + " must be absolute and without '..'"
}
