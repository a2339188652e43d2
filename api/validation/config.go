package validation

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// The grace period a primary needs: Valkey's manual failover timeout (from the config,
// in milliseconds) plus a headroom, never less than the Kubernetes default.
const (
	// ConfigManualFailoverTimeout is the config key bounding a manual failover.
	ConfigManualFailoverTimeout = "cluster-manual-failover-timeout"
	// DefaultManualFailoverTimeoutMillis is Valkey's default for that key.
	DefaultManualFailoverTimeoutMillis = 5000
	// GracePeriodHeadroomSeconds is added to the failover timeout.
	GracePeriodHeadroomSeconds = 10
	// KubernetesDefaultGracePeriodSeconds is the pod default and the derived minimum.
	KubernetesDefaultGracePeriodSeconds = 30
)

// MinimumGracePeriodSeconds is the shortest grace period that lets a primary finish a
// manual failover before it is killed: the failover timeout from config (rounded up to
// whole seconds) plus GracePeriodHeadroomSeconds. It fails when the timeout in config
// is not a valid number of milliseconds.
func MinimumGracePeriodSeconds(config map[string]string) (int64, error) {
	millis := int64(DefaultManualFailoverTimeoutMillis)
	if raw, ok := lookupConfig(config, ConfigManualFailoverTimeout); ok {
		v, err := parseFailoverTimeout(raw)
		if err != nil {
			return 0, err
		}
		millis = v
	}
	return (millis+999)/1000 + GracePeriodHeadroomSeconds, nil
}

// GracePeriodSeconds is the grace period the pods get: the explicit value when set,
// otherwise the larger of the Kubernetes default and MinimumGracePeriodSeconds.
func GracePeriodSeconds(s *v1alpha1.ValkeyClusterSpec) int64 {
	if s.TerminationGracePeriodSeconds != nil {
		return *s.TerminationGracePeriodSeconds
	}
	minimum, err := MinimumGracePeriodSeconds(s.Config)
	if err != nil || minimum < KubernetesDefaultGracePeriodSeconds {
		return KubernetesDefaultGracePeriodSeconds
	}
	return minimum
}

// GracePeriodTooShort reports whether an explicit grace period is below
// MinimumGracePeriodSeconds, and that minimum.
func GracePeriodTooShort(s *v1alpha1.ValkeyClusterSpec) (bool, int64) {
	minimum, err := MinimumGracePeriodSeconds(s.Config)
	if err != nil || s.TerminationGracePeriodSeconds == nil {
		return false, minimum
	}
	return *s.TerminationGracePeriodSeconds < minimum, minimum
}

// lookupConfig finds a key in the user's config, ignoring case as Valkey does.
func lookupConfig(config map[string]string, key string) (string, bool) {
	for k, v := range config {
		if strings.EqualFold(strings.TrimSpace(k), key) {
			return v, true
		}
	}
	return "", false
}

// parseFailoverTimeout parses the manual failover timeout the way Valkey bounds it.
func parseFailoverTimeout(raw string) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	if err != nil || v < 1 || v > math.MaxInt32 {
		return 0, fmt.Errorf("parse %s %q: must be a whole number of milliseconds between 1 and %d",
			ConfigManualFailoverTimeout, raw, math.MaxInt32)
	}
	return v, nil
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
		if lower := strings.ToLower(k); seen[lower] {
			errs = append(errs, field.Duplicate(kp, k))
		} else {
			seen[lower] = true
		}
	}
	errs = append(errs, validateFailoverTimeout(config, p)...)
	return errs
}

// validateConfigKey refuses malformed keys and the keys the operator manages.
func validateConfigKey(k string, p *field.Path) field.ErrorList {
	if !valkey.IsValidConfigKey(k) {
		return field.ErrorList{field.Invalid(p, k,
			"is not a configuration name: use letters, digits, '-', '_' and '.' only")}
	}
	if valkey.IsOperatorOwned(k) {
		return field.ErrorList{field.Forbidden(p, fmt.Sprintf(
			"%q is managed by the operator and cannot be set; the operator owns: %s", k, ownedKeysList()))}
	}
	return nil
}

// ownedKeysList renders the operator-owned keys for a message ("tls-*" for families).
func ownedKeysList() string {
	names := make([]string, 0, len(valkey.OperatorOwnedKeys))
	for _, k := range valkey.OperatorOwnedKeys {
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

// validateFailoverTimeout checks the one numeric key the operator derives from.
func validateFailoverTimeout(config map[string]string, p *field.Path) field.ErrorList {
	for k, v := range config {
		if !strings.EqualFold(k, ConfigManualFailoverTimeout) {
			continue
		}
		if _, err := parseFailoverTimeout(v); err != nil {
			return field.ErrorList{field.Invalid(p.Key(k), v, fmt.Sprintf(
				"must be a whole number of milliseconds between 1 and %d", math.MaxInt32))}
		}
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
