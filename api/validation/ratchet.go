package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// An update checks against the key table only the config entries it changes, as
// Kubernetes ratchets CRD schema validation: an entry whose key and value are the stored
// object's, under the same image, was admitted before (perhaps by an older operator
// whose table took it) and its servers run with it, so refusing it would refuse every
// later change of the cluster (a scale, a new user) until the entry goes. Every other
// rule (owned and refused keys, the size limits) applies to every entry, and an image
// change checks every entry again: a key the new version lacks would stop its servers.

// changedConfig returns the entries of c's config that the update from old changes:
// every entry when the image changes.
func changedConfig(old, c *v1alpha1.ValkeyCluster) map[string]string {
	return pickConfig(c, old, false)
}

// unchangedConfig returns the entries of c's config that the update from old keeps
// as they were: none when the image changes.
func unchangedConfig(old, c *v1alpha1.ValkeyCluster) map[string]string {
	return pickConfig(c, old, true)
}

// pickConfig returns the entries of c's config that are (kept) or are not (!kept) in
// old's with the same value, under the same image.
func pickConfig(c, old *v1alpha1.ValkeyCluster, kept bool) map[string]string {
	sameImage := old.Spec.ImageOrDefault() == c.Spec.ImageOrDefault()
	out := map[string]string{}
	for k, v := range c.Spec.Config {
		was, ok := old.Spec.Config[k]
		if (sameImage && ok && was == v) == kept {
			out[k] = v
		}
	}
	return out
}

// configTableWarnings words the key table's findings on entries that are kept (a stored
// cluster, an unchanged entry) as warnings that say what may happen and what to do; a
// finding of an unknown key already names the administrator's way to admit it.
func configTableWarnings(errs field.ErrorList) []string {
	warnings := make([]string, 0, len(errs))
	for _, e := range errs {
		warnings = append(warnings, e.Error()+"; the operator acts on this cluster all the same, "+
			"but a server may refuse the entry at the next restart of a member: remove or correct it")
	}
	return warnings
}
