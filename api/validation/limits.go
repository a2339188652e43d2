package validation

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// Size limits of one object. A ValkeyCluster's config and container patches are copied
// into every member (its ValkeyNode, workload and ConfigMap) and its whole spec into
// status.appliedSpec, and every component caches them, so one spec must stay small
// whatever its author writes. Counts and lengths the CRD schema can state are also its
// markers (the API server refuses them with or without the webhooks; the marker and the
// constant are kept equal by TestSchemaLimits); the byte totals are this package's only.
// Each is generous for every manifest of the reference documentation and docs/examples.
const (
	MaxConfigEntries     = 200
	MaxConfigKeyLength   = 128
	MaxConfigValueLength = 4096
	MaxConfigBytes       = 64 * 1024
	MaxContainers        = 8
	MaxContainersBytes   = 64 * 1024
	MaxImagePullSecrets  = 16
	MaxImageLength       = 512
	MaxUsers             = 100
	// MaxUsersACLBytes bounds the lines spec.users adds to the aclfile (ACLLineBytes),
	// which the ACL Secret holds (at most 1 MiB) and every server loads.
	MaxUsersACLBytes      = 64 * 1024
	MaxUserNameLength     = 128
	MaxUserListEntries    = 256
	MaxUserEntryLength    = 1024
	MaxPermissionsLength  = 4096
	MaxPasswordKeys       = 16
	MaxTolerations        = 64
	MaxNodeSelector       = 64
	MaxSpreadConstraints  = 16
	MaxAffinityBytes      = 32 * 1024
	MaxServiceAnnotations = 64
	MaxServiceLabels      = 64
	MaxAnnotationsBytes   = 32 * 1024
	MaxSourceRanges       = 64
	MaxSourceRangeLength  = 64
	MaxNetworkPolicyPeers = 64
	MaxKubernetesNameLen  = 253
	// MaxCertificateNames bounds spec.tls.certManager.dnsNames and ipAddresses each;
	// MaxIPAddressLength is the longest textual IPv6 address.
	MaxCertificateNames    = 32
	MaxIPAddressLength     = 45
	MaxDurationLength      = 32
	MaxObjectStoreEndpoint = 512
	MaxRegionLength        = 63
	MaxScheduleLength      = 128
	MaxDataSourcePath      = 1024
	MaxPrefixLength        = 256
	// MaxSpecBytes bounds the JSON of a whole ValkeyCluster spec, for what the limits
	// above leave open (resources, affinity terms, peers' selectors).
	MaxSpecBytes = 256 * 1024
)

// validateClusterSize checks the limits of a ValkeyCluster spec that keep the objects
// made from it small.
func validateClusterSize(s *v1alpha1.ValkeyClusterSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, tooLong(p.Child("image"), s.Image, MaxImageLength)...)
	errs = append(errs, tooMany(p.Child("imagePullSecrets"), len(s.ImagePullSecrets), MaxImagePullSecrets)...)
	errs = append(errs, validateConfigSize(s.Config, p.Child("config"))...)
	errs = append(errs, tooMany(p.Child("containers"), len(s.Containers), MaxContainers)...)
	errs = append(errs, jsonTooBig(p.Child("containers"), s.Containers, MaxContainersBytes)...)
	errs = append(errs, tooLong(p.Child("exporter", "image"), s.Exporter.Image, MaxImageLength)...)
	if s.Persistence != nil && s.Persistence.StorageClassName != nil {
		errs = append(errs, tooLong(p.Child("persistence", "storageClassName"), *s.Persistence.StorageClassName, MaxKubernetesNameLen)...)
	}
	errs = append(errs, validateSchedulingSize(s.Scheduling, p.Child("scheduling"))...)
	errs = append(errs, validateTLSSize(s.TLS, p.Child("tls"))...)
	errs = append(errs, validateUsersSize(s.Users, p.Child("users"))...)
	if np := s.NetworkPolicy; np != nil {
		errs = append(errs, tooMany(p.Child("networkPolicy", "clients"), len(np.Clients), MaxNetworkPolicyPeers)...)
		errs = append(errs, tooMany(p.Child("networkPolicy", "metrics"), len(np.Metrics), MaxNetworkPolicyPeers)...)
	}
	errs = append(errs, validateExternalAccessSize(s.ExternalAccess, p.Child("externalAccess"))...)
	if len(errs) == 0 {
		errs = append(errs, jsonTooBig(p, s, MaxSpecBytes)...)
	}
	return errs
}

// validateTLSSize bounds spec.tls: the Secret's name, the issuer's name and group, the
// durations and the extra names of a certificate cert-manager issues.
func validateTLSSize(t *v1alpha1.TLSSpec, p *field.Path) field.ErrorList {
	if t == nil {
		return nil
	}
	var errs field.ErrorList
	if t.Certificate != nil {
		errs = append(errs, tooLong(p.Child("certificate", "secretName"), t.Certificate.SecretName, MaxKubernetesNameLen)...)
	}
	cm := t.CertManager
	if cm == nil {
		return errs
	}
	p = p.Child("certManager")
	if r := cm.IssuerRef; r != nil {
		errs = append(errs, tooLong(p.Child("issuerRef", "name"), r.Name, MaxKubernetesNameLen)...)
		errs = append(errs, tooLong(p.Child("issuerRef", "group"), r.Group, MaxKubernetesNameLen)...)
	}
	errs = append(errs, stringList(p.Child("dnsNames"), cm.DNSNames, MaxCertificateNames, MaxKubernetesNameLen)...)
	errs = append(errs, stringList(p.Child("ipAddresses"), cm.IPAddresses, MaxCertificateNames, MaxIPAddressLength)...)
	return errs
}

// validateConfigSize bounds the config map: entries, key and value lengths, and the
// bytes of all of them, which every member's ConfigMap and ValkeyNode repeat.
func validateConfigSize(config map[string]string, p *field.Path) field.ErrorList {
	errs := tooMany(p, len(config), MaxConfigEntries)
	keys := make([]string, 0, len(config))
	total := 0
	for k, v := range config {
		keys = append(keys, k)
		total += len(k) + len(v)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if n := utf8.RuneCountInString(k); n > MaxConfigKeyLength {
			errs = append(errs, &field.Error{Type: field.ErrorTypeTooLong, Field: p.String(), BadValue: "<value omitted>",
				Detail: fmt.Sprintf("a key of %d characters; a key may have at most %d", n, MaxConfigKeyLength)})
			continue
		}
		errs = append(errs, tooLong(p.Key(k), config[k], MaxConfigValueLength)...)
	}
	if total > MaxConfigBytes {
		errs = append(errs, bytesTooMany(p, total, MaxConfigBytes, "of keys and values"))
	}
	return errs
}

// validateSchedulingSize bounds the placement lists every pod repeats.
func validateSchedulingSize(s *v1alpha1.SchedulingSpec, p *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	errs = append(errs, tooMany(p.Child("tolerations"), len(s.Tolerations), MaxTolerations)...)
	errs = append(errs, tooMany(p.Child("nodeSelector"), len(s.NodeSelector), MaxNodeSelector)...)
	errs = append(errs, jsonTooBig(p.Child("affinity"), s.Affinity, MaxAffinityBytes)...)
	errs = append(errs, tooLong(p.Child("priorityClassName"), s.PriorityClassName, MaxKubernetesNameLen)...)
	errs = append(errs, tooMany(p.Child("topologySpreadConstraints"), len(s.TopologySpreadConstraints), MaxSpreadConstraints)...)
	return errs
}

// validateUsersSize bounds the users and their lists, which the aclfile Secret holds.
func validateUsersSize(users []v1alpha1.UserSpec, p *field.Path) field.ErrorList {
	errs := tooMany(p, len(users), MaxUsers)
	for i := range users {
		u, up := &users[i], p.Index(i)
		errs = append(errs, tooLong(up.Child("name"), u.Name, MaxUserNameLength)...)
		errs = append(errs, tooLong(up.Child("permissions"), u.Permissions, MaxPermissionsLength)...)
		if ps := u.PasswordSecret; ps != nil {
			errs = append(errs, tooLong(up.Child("passwordSecret", "name"), ps.Name, MaxKubernetesNameLen)...)
			errs = append(errs, stringList(up.Child("passwordSecret", "keys"), ps.Keys, MaxPasswordKeys, MaxKubernetesNameLen)...)
		}
		if c := u.Commands; c != nil {
			errs = append(errs, stringList(up.Child("commands", "allow"), c.Allow, MaxUserListEntries, MaxUserEntryLength)...)
			errs = append(errs, stringList(up.Child("commands", "deny"), c.Deny, MaxUserListEntries, MaxUserEntryLength)...)
		}
		if k := u.Keys; k != nil {
			errs = append(errs, stringList(up.Child("keys", "readWrite"), k.ReadWrite, MaxUserListEntries, MaxUserEntryLength)...)
			errs = append(errs, stringList(up.Child("keys", "readOnly"), k.ReadOnly, MaxUserListEntries, MaxUserEntryLength)...)
			errs = append(errs, stringList(up.Child("keys", "writeOnly"), k.WriteOnly, MaxUserListEntries, MaxUserEntryLength)...)
		}
		if c := u.Channels; c != nil {
			errs = append(errs, stringList(up.Child("channels", "patterns"), c.Patterns, MaxUserListEntries, MaxUserEntryLength)...)
		}
	}
	if len(errs) > 0 {
		return errs
	}
	total := 0
	for i := range users {
		total += ACLLineBytes(&users[i])
	}
	if total > MaxUsersACLBytes {
		errs = append(errs, bytesTooMany(p, total, MaxUsersACLBytes,
			"of aclfile lines (names, password hashes, key and channel patterns, commands, permissions)"))
	}
	return errs
}

// aclHashRule is the length of a password rule in the aclfile: '#' (or '!') and the
// password's SHA-256 in hex.
const aclHashRule = 1 + 64

// ACLLineBytes is the length of the user's line in the aclfile the acl-controller
// renders ("user <name> on #<hash>... ~<pattern>... resetchannels &<pattern>... +@pubsub
// +<command>... -<command>... <permissions>" and a newline), counting one hash rule per
// password key and every clear-text password rule of permissions as its hash rule. It
// is exact when the keys hold different passwords and an upper bound otherwise; the
// acl-controller's tests keep it equal to its renderer.
func ACLLineBytes(u *v1alpha1.UserSpec) int {
	n := len("user ") + len(u.Name) + len("\n")
	rule := func(prefix, s string) { n += len(" ") + len(prefix) + len(s) }
	rule("", "on")
	switch {
	case u.NoPass:
		rule("", "nopass")
	case u.PasswordSecret != nil:
		n += len(u.PasswordSecret.Keys) * (len(" ") + aclHashRule)
	}
	if k := u.Keys; k != nil {
		for _, s := range k.ReadWrite {
			rule("~", s)
		}
		for _, s := range k.ReadOnly {
			rule("%R~", s)
		}
		for _, s := range k.WriteOnly {
			rule("%W~", s)
		}
	}
	rule("", "resetchannels")
	if c := u.Channels; c != nil && len(c.Patterns) > 0 {
		for _, s := range c.Patterns {
			rule("&", s)
		}
		rule("", "+@pubsub")
	}
	if c := u.Commands; c != nil {
		for _, s := range c.Allow {
			rule("+", s)
		}
		for _, s := range c.Deny {
			rule("-", s)
		}
	}
	for _, f := range strings.Fields(u.Permissions) {
		if strings.HasPrefix(f, ">") || strings.HasPrefix(f, "<") {
			n += len(" ") + aclHashRule
			continue
		}
		rule("", f)
	}
	return n
}

// validateExternalAccessSize bounds what every per-member Service repeats.
func validateExternalAccessSize(e *v1alpha1.ExternalAccessSpec, p *field.Path) field.ErrorList {
	if e == nil {
		return nil
	}
	errs := tooMany(p.Child("annotations"), len(e.Annotations), MaxServiceAnnotations)
	total := 0
	for k, v := range e.Annotations {
		total += len(k) + len(v)
	}
	if total > MaxAnnotationsBytes {
		errs = append(errs, bytesTooMany(p.Child("annotations"), total, MaxAnnotationsBytes, "of keys and values"))
	}
	errs = append(errs, tooMany(p.Child("labels"), len(e.Labels), MaxServiceLabels)...)
	errs = append(errs, stringList(p.Child("loadBalancerSourceRanges"), e.LoadBalancerSourceRanges, MaxSourceRanges, MaxSourceRangeLength)...)
	return errs
}

// tooMany refuses a list or map of more than max entries, as the API server words it.
func tooMany(p *field.Path, n, max int) field.ErrorList {
	if n > max {
		return field.ErrorList{field.TooMany(p, n, max)}
	}
	return nil
}

// tooLong refuses a string of more than max characters, as the API server words it.
func tooLong(p *field.Path, s string, max int) field.ErrorList {
	if utf8.RuneCountInString(s) > max {
		return field.ErrorList{field.TooLongCharacters(p, s, max)}
	}
	return nil
}

// stringList bounds a list of strings and each of its entries.
func stringList(p *field.Path, list []string, maxItems, maxLength int) field.ErrorList {
	errs := tooMany(p, len(list), maxItems)
	for i, s := range list {
		errs = append(errs, tooLong(p.Index(i), s, maxLength)...)
	}
	return errs
}

// jsonTooBig refuses a value whose JSON is more than max bytes.
func jsonTooBig(p *field.Path, v any, max int) field.ErrorList {
	b, err := json.Marshal(v)
	if err != nil {
		return field.ErrorList{field.InternalError(p, fmt.Errorf("encode to measure its size: %w", err))}
	}
	if len(b) > max {
		return field.ErrorList{bytesTooMany(p, len(b), max, "of JSON")}
	}
	return nil
}

// bytesTooMany says how big a value is and how big it may be.
func bytesTooMany(p *field.Path, n, max int, what string) *field.Error {
	return &field.Error{Type: field.ErrorTypeTooLong, Field: p.String(), BadValue: fmt.Sprintf("%d bytes", n),
		Detail: fmt.Sprintf("%d bytes %s, more than the %d bytes allowed", n, what, max)}
}
