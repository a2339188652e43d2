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

// validateConfig checks every key and value of a config map.
func validateConfig(config map[string]string, p *field.Path) field.ErrorList {
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var errs field.ErrorList
	seen := map[string]bool{}
	for _, k := range keys {
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
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var errs field.ErrorList
	for _, k := range keys {
		need := valkeyconf.Since(k, config[k])
		if valkeyconf.SurelyLacks(v, known, need) {
			errs = append(errs, field.Invalid(p.Key(k), config[k], fmt.Sprintf(
				"Valkey %d.%d and later take this; the image %s runs %s", need.Major, need.Minor, image, describeTagVersion(v, known))))
		}
	}
	return errs
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
