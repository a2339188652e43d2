package validation

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkeyconf"
)

// GracePeriodSeconds is the grace period the pods get (valkeyconf.GracePeriodSeconds).
func GracePeriodSeconds(s *v1alpha1.ValkeyClusterSpec) int64 {
	return valkeyconf.GracePeriodSeconds(s.TerminationGracePeriodSeconds, s.Config)
}

// GracePeriodTooShort reports whether an explicit grace period is below what a primary
// needs to hand over its slots (valkeyconf.MinimumGracePeriodSeconds), and that minimum.
func GracePeriodTooShort(s *v1alpha1.ValkeyClusterSpec) (bool, int64) {
	minimum := valkeyconf.MinimumGracePeriodSeconds(s.Config)
	if s.TerminationGracePeriodSeconds == nil {
		return false, minimum
	}
	return *s.TerminationGracePeriodSeconds < minimum, minimum
}

// validateConfig checks every key and value of a config map with the rules that hold
// whatever the Valkey version: names, owned and refused keys, modules, bounds. The key
// table's checks are validateConfigTable's.
func validateConfig(config map[string]string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for _, k := range sortedKeys(config) {
		kp := p.Key(k)
		errs = append(errs, validateConfigKey(k, kp)...)
		errs = append(errs, validateConfigValue(config[k], kp)...)
		errs = append(errs, validateModule(k, config[k], kp)...)
		errs = append(errs, validateBound(k, config[k], kp)...)
		if lower := strings.ToLower(k); seen[lower] {
			errs = append(errs, field.Duplicate(kp, k))
		} else {
			seen[lower] = true
		}
	}
	return errs
}

// validateConfigTable checks config against the key table (valkeyconf, measured on the
// real servers): every key one a supported Valkey takes, every value one its server
// takes (validateKnownKey), and both taken by the Valkey the image's tag names
// (validateConfigForImage). Keys that validateConfigKey refuses are its part.
func validateConfigTable(config map[string]string, image string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedKeys(config) {
		if kp := p.Key(k); len(validateConfigKey(k, kp)) == 0 {
			errs = append(errs, validateKnownKey(k, config[k], kp)...)
		}
	}
	return append(errs, validateConfigForImage(config, image, p)...)
}

// sortedKeys returns the keys of config in order, so errors come in a stable order.
func sortedKeys(config map[string]string) []string {
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// validateConfigKey refuses malformed keys and the keys the operator manages.
func validateConfigKey(k string, p *field.Path) field.ErrorList {
	if !valkeyconf.ValidName(k) {
		return field.ErrorList{field.Invalid(p, k,
			"is not a configuration name: use letters, digits, '-', '_' and '.' only")}
	}
	r, refused := valkeyconf.Refused(k)
	switch {
	case !refused:
		return nil
	case r.Owned:
		return field.ErrorList{field.Forbidden(p, fmt.Sprintf(
			"%q is managed by the operator and cannot be set; the operator owns: %s", k, ownedKeysList()))}
	case r.Key == valkeyconf.LoadModule:
		return nil // the value decides (validateModule)
	default:
		return field.ErrorList{field.Forbidden(p, fmt.Sprintf("%q is refused: %s", k, r.Why))}
	}
}

// validateKnownKey refuses a key that no supported Valkey takes (unless the
// administrator admits it: Policy.AllowedConfigKeys), and a value that no supported
// Valkey takes for its key, naming what the key takes. Which versions take it is
// validateConfigForImage's part.
func validateKnownKey(k, v string, p *field.Path) field.ErrorList {
	key := valkeyconf.Normalize(k)
	switch {
	case key == valkeyconf.LoadModule:
		return nil // a directive, not a key (validateModule)
	case !valkeyconf.Known(key):
		if CurrentPolicy().configKeyAllowed(key) {
			return nil
		}
		return field.ErrorList{field.Invalid(p, k, fmt.Sprintf(
			"is not a configuration key of any supported Valkey (%s, as their servers list them); "+
				"an administrator may admit the keys of a newer Valkey (the chart's policy.allowedConfigKeys)", measuredList()))}
	case len(valkeyconf.Takers(key, v)) > 0:
		return nil
	}
	vs := valkeyconf.KeyVersions(key)
	t, _ := valkeyconf.TypeOf(key, vs[len(vs)-1])
	return field.ErrorList{field.Invalid(p, v, "must be "+t.String())}
}

// measuredList names the measured servers: "8.0, 8.1, 9.1".
func measuredList() string {
	names := make([]string, len(valkeyconf.Measured))
	for i, m := range valkeyconf.Measured {
		names[i] = fmt.Sprintf("%d.%d", m.Major, m.Minor)
	}
	return strings.Join(names, ", ")
}

// validateModule checks a loadmodule value against the module paths the administrator
// allows (none by default).
func validateModule(k, v string, p *field.Path) field.ErrorList {
	if valkeyconf.Normalize(k) != valkeyconf.LoadModule {
		return nil
	}
	pol := CurrentPolicy()
	if pol.moduleAllowed(v) {
		return nil
	}
	r, _ := valkeyconf.Refused(k)
	allowed := "none"
	if len(pol.AllowedModules) > 0 {
		allowed = strings.Join(pol.AllowedModules, ", ")
	}
	return field.ErrorList{field.Forbidden(p, fmt.Sprintf(
		"%q is refused: %s; module paths allowed by the operator's administrator: %s", k, r.Why, allowed))}
}

// ownedKeysList renders the operator-owned keys for a message ("tls-*" for families).
func ownedKeysList() string {
	names := make([]string, 0, len(valkeyconf.OwnedKeys))
	for _, k := range valkeyconf.OwnedKeys {
		if strings.HasSuffix(k, "-") {
			k += "*"
		}
		names = append(names, k)
	}
	return strings.Join(names, ", ")
}

// validateConfigValue refuses values that would break the rendered valkey.conf line.
func validateConfigValue(v string, p *field.Path) field.ErrorList {
	if !v1alpha1.IsScalarText(v) {
		return field.ErrorList{field.Invalid(p, v, "must be a string, number or boolean")}
	}
	if hasControl(v, true) {
		return field.ErrorList{field.Invalid(p, v, "must not contain newlines or other control characters")}
	}
	return nil
}

// validateConfigForImage refuses keys (and values) that the image's Valkey surely does
// not take, when its tag says which version it runs: such a server would not start.
// When the tag names no version (latest, a digest, a mirror's tag), the server's own
// version decides when the pod starts (see the node-controller's start script).
func validateConfigForImage(config map[string]string, image string, p *field.Path) field.ErrorList {
	v, known := valkeyconf.ImageVersion(image)
	if known == 0 {
		return nil
	}
	var errs field.ErrorList
	for _, k := range sortedKeys(config) {
		takers := valkeyconf.Takers(k, config[k])
		if len(takers) == 0 {
			takers = valkeyconf.KeyVersions(k) // a value no version takes: validateKnownKey
		}
		if len(takers) == 0 || slices.ContainsFunc(takers, func(m valkeyconf.Version) bool { return tagMayRun(v, known, m) }) {
			continue
		}
		errs = append(errs, field.Invalid(p.Key(k), config[k], fmt.Sprintf(
			"%s take this; the image %s runs %s", valkeyconf.DescribeVersions(takers), image, describeTagVersion(v, known))))
	}
	return errs
}

// tagMayRun reports whether an image whose tag says v (to the precision known, as
// valkeyconf.ImageVersion returns) may run a server that the measured server m stands
// for: any measured one of its major when the tag names the major only.
func tagMayRun(v valkeyconf.Version, known int, m valkeyconf.Version) bool {
	sameMajor := func(x valkeyconf.Version) bool { return x.Major == v.Major }
	if known == 1 && slices.ContainsFunc(valkeyconf.Measured, sameMajor) {
		return sameMajor(m)
	}
	return valkeyconf.MeasuredFor(v) == m
}

// describeTagVersion says what an image tag tells of its version.
func describeTagVersion(v valkeyconf.Version, known int) string {
	if known == 1 {
		return fmt.Sprintf("%d.x", v.Major)
	}
	return fmt.Sprintf("%d.%d", v.Major, v.Minor)
}

// validateBound checks a key the operator derives timings from against its range.
func validateBound(k, v string, p *field.Path) field.ErrorList {
	if b, bounded, ok := valkeyconf.CheckBound(k, v); bounded && !ok {
		return field.ErrorList{field.Invalid(p, v, fmt.Sprintf(
			"must be a whole number of milliseconds between %d and %d: %s", b.Min, b.Max, b.Why))}
	}
	return nil
}

// hasControl reports whether s holds a control character (tab excepted when allowTab).
func hasControl(s string, allowTab bool) bool {
	for _, r := range s {
		if r == '\t' && allowTab {
			continue
		}
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}
