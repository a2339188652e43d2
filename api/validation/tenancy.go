package validation

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// Profile is a set of policy defaults for one kind of installation.
type Profile string

const (
	// ProfileDefault trusts the users of every watched namespace as much as the
	// administrator: sidecars and every external access are admitted.
	ProfileDefault Profile = "default"
	// ProfileMultiTenant is for a Kubernetes shared by teams that do not trust each
	// other: sidecars refused, external access only as the allow-lists say (empty lists
	// allow none of it), and every cluster keeps its NetworkPolicy.
	ProfileMultiTenant Profile = "multiTenant"
)

// FlagPolicyProfile is the flag (and FlagExternalAccess* the flags) that set the
// profile and the external access allow-lists in every component.
const (
	FlagPolicyProfile                  = "policy-profile"
	FlagExternalAccessTypes            = "external-access-types"
	FlagExternalAccessAnnotations      = "external-access-annotations"
	FlagExternalAccessHostnameSuffixes = "external-access-hostname-suffixes"
)

// ParseProfile reads a profile name; empty is the default profile.
func ParseProfile(s string) (Profile, error) {
	switch p := Profile(strings.TrimSpace(s)); p {
	case "", ProfileDefault:
		return ProfileDefault, nil
	case ProfileMultiTenant:
		return p, nil
	default:
		return "", fmt.Errorf("--%s: %q: want %s or %s", FlagPolicyProfile, s, ProfileDefault, ProfileMultiTenant)
	}
}

// ExternalAccessPolicy decides what spec.externalAccess may ask for. Each list, when
// not empty, is the only thing admitted; in the multiTenant profile an empty list
// admits nothing.
type ExternalAccessPolicy struct {
	// Types are the spec.externalAccess.type values admitted besides None.
	Types []v1alpha1.ExternalAccessType
	// Annotations are the Service annotation keys admitted: a whole key
	// (service.beta.kubernetes.io/aws-load-balancer-internal) or, ending in "/", every
	// key of that prefix (external-dns.alpha.kubernetes.io/).
	Annotations []string
	// HostnameSuffixes are the DNS suffixes a hostnameTemplate must end with
	// (.valkey.team-a.example.com).
	HostnameSuffixes []string
}

func (e ExternalAccessPolicy) clone() ExternalAccessPolicy {
	return ExternalAccessPolicy{Types: slices.Clone(e.Types), Annotations: slices.Clone(e.Annotations),
		HostnameSuffixes: slices.Clone(e.HostnameSuffixes)}
}

// ParseExternalAccessPolicy reads the three comma-separated flag values.
func ParseExternalAccessPolicy(types, annotations, suffixes string) (ExternalAccessPolicy, error) {
	var e ExternalAccessPolicy
	for _, t := range splitList(types) {
		switch at := v1alpha1.ExternalAccessType(t); at {
		case v1alpha1.ExternalAccessNodePort, v1alpha1.ExternalAccessLoadBalancer:
			e.Types = append(e.Types, at)
		default:
			return e, fmt.Errorf("--%s: %q: want %s or %s", FlagExternalAccessTypes, t, v1alpha1.ExternalAccessNodePort, v1alpha1.ExternalAccessLoadBalancer)
		}
	}
	for _, a := range splitList(annotations) {
		if strings.ContainsAny(a, " *") {
			return e, fmt.Errorf("--%s: %q: want an annotation key, or a prefix ending in /", FlagExternalAccessAnnotations, a)
		}
		e.Annotations = append(e.Annotations, a)
	}
	for _, s := range splitList(suffixes) {
		if !strings.HasPrefix(s, ".") || strings.Count(s, ".") < 2 || strings.ContainsAny(s, "{}* ") {
			return e, fmt.Errorf("--%s: %q: want a DNS suffix starting with a dot and naming a domain, such as .valkey.example.com",
				FlagExternalAccessHostnameSuffixes, s)
		}
		e.HostnameSuffixes = append(e.HostnameSuffixes, strings.ToLower(s))
	}
	return e, nil
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// SidecarsRefused reports whether spec.containers may hold only patches of the
// operator's own containers: asked for, or implied by the multiTenant profile.
func (p Policy) SidecarsRefused() bool {
	return p.RefuseSidecars || p.Profile == ProfileMultiTenant
}

// restricts reports whether an allow-list of n entries limits what is admitted.
func (p Policy) restricts(n int) bool {
	return n > 0 || p.Profile == ProfileMultiTenant
}

// validateExternalAccessPolicy checks spec.externalAccess against the administrator's
// allow-lists.
func validateExternalAccessPolicy(e *v1alpha1.ExternalAccessSpec, pol Policy, p *field.Path) field.ErrorList {
	if e == nil {
		return nil
	}
	var errs field.ErrorList
	allow := pol.ExternalAccess
	if e.Type != "" && e.Type != v1alpha1.ExternalAccessNone && pol.restricts(len(allow.Types)) && !slices.Contains(allow.Types, e.Type) {
		errs = append(errs, field.Forbidden(p.Child("type"), fmt.Sprintf(
			"%s is not admitted by this operator's policy (policy.externalAccess.allowedTypes: %s)", e.Type, describeList(allow.Types))))
	}
	if pol.restricts(len(allow.Annotations)) {
		for _, k := range slices.Sorted(maps.Keys(e.Annotations)) {
			if !annotationAllowed(k, allow.Annotations) {
				errs = append(errs, field.Forbidden(p.Child("annotations").Key(k), fmt.Sprintf(
					"is not admitted by this operator's policy (policy.externalAccess.allowedAnnotations: %s)", describeList(allow.Annotations))))
			}
		}
	}
	if t := e.HostnameTemplate; t != "" && pol.restricts(len(allow.HostnameSuffixes)) && !hostnameAllowed(t, allow.HostnameSuffixes) {
		errs = append(errs, field.Forbidden(p.Child("hostnameTemplate"), fmt.Sprintf(
			"must end with a suffix this operator's policy admits (policy.externalAccess.allowedHostnameSuffixes: %s)", describeList(allow.HostnameSuffixes))))
	}
	return errs
}

// validateNetworkPolicyProfile keeps every cluster's NetworkPolicy in the multiTenant
// profile: without it, any pod of the Kubernetes cluster reaches the members' bus.
func validateNetworkPolicyProfile(np *v1alpha1.NetworkPolicySpec, pol Policy, p *field.Path) field.ErrorList {
	if pol.Profile != ProfileMultiTenant || np == nil || ptr.Deref(np.Enabled, true) {
		return nil
	}
	return field.ErrorList{field.Forbidden(p.Child("enabled"),
		"may not be false under this operator's multiTenant policy profile: without the NetworkPolicy, pods of other namespaces reach the members' cluster bus")}
}

func annotationAllowed(key string, allowed []string) bool {
	return slices.ContainsFunc(allowed, func(a string) bool {
		return key == a || (strings.HasSuffix(a, "/") && strings.HasPrefix(key, a))
	})
}

func hostnameAllowed(template string, suffixes []string) bool {
	t := strings.ToLower(template)
	return slices.ContainsFunc(suffixes, func(s string) bool { return strings.HasSuffix(t, s) })
}

func describeList[T ~string](l []T) string {
	if len(l) == 0 {
		return "none"
	}
	s := make([]string, len(l))
	for i, v := range l {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}
