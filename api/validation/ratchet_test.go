package validation

import (
	"strings"
	"testing"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// withImage sets spec.image.
func withImage(image string) func(c *v1alpha1.ValkeyCluster) {
	return func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = image }
}

// both applies every change in order.
func both(changes ...func(c *v1alpha1.ValkeyCluster)) func(c *v1alpha1.ValkeyCluster) {
	return func(c *v1alpha1.ValkeyCluster) {
		for _, change := range changes {
			change(c)
		}
	}
}

// TestValidateClusterUpdateRatchetsConfigTable: an update checks against the key table
// only the config entries it changes (or all of them when the image changes); every
// other rule applies to every entry.
func TestValidateClusterUpdateRatchetsConfigTable(t *testing.T) {
	scale := func(c *v1alpha1.ValkeyCluster) { c.Spec.Shards = 4 }
	for _, tc := range []struct {
		name     string
		old, new func(c *v1alpha1.ValkeyCluster)
		want     []string
		// absent are substrings no error may contain.
		absent []string
	}{
		{name: "an unchanged unknown key, on a scale",
			old: config("lua-replicate-commands", "yes"), new: both(config("lua-replicate-commands", "yes"), scale)},
		{name: "an unchanged value of the wrong type, on a scale",
			old: config("maxmemory", "lots"), new: both(config("maxmemory", "lots"), scale)},
		{name: "an unchanged key the image's version lacks",
			old: config("cluster-databases", "4"), new: both(config("cluster-databases", "4"), scale)},
		{name: "a changed value is checked",
			old: config("maxmemory", "lots"), new: config("maxmemory", "heaps"),
			want: []string{`spec.config[maxmemory]: Invalid value: "heaps": must be a memory size`}},
		{name: "a changed value of an unknown key is checked",
			old: config("lua-replicate-commands", "yes"), new: config("lua-replicate-commands", "no"),
			want: []string{`spec.config[lua-replicate-commands]: Invalid value: "lua-replicate-commands": is not a configuration key`}},
		{name: "a new unknown key is refused",
			new:  config("maxmemroy", "1gb"),
			want: []string{`spec.config[maxmemroy]: Invalid value: "maxmemroy": is not a configuration key`}},
		{name: "a key written in another case is a new entry",
			old: config("lua-replicate-commands", "yes"), new: config("Lua-Replicate-Commands", "yes"),
			want: []string{"spec.config[Lua-Replicate-Commands]: Invalid value"}},
		{name: "only the changed entries are checked",
			old: config("lua-replicate-commands", "yes"), new: config("lua-replicate-commands", "yes", "maxmemory", "lots"),
			want: []string{`spec.config[maxmemory]: Invalid value: "lots"`}, absent: []string{"lua-replicate-commands"}},
		{name: "an image change checks an unchanged key again",
			old:  both(withImage("valkey/valkey:9.1.2"), config("cluster-databases", "4")),
			new:  both(withImage("valkey/valkey:8.1.1"), config("cluster-databases", "4")),
			want: []string{`spec.config[cluster-databases]: Invalid value: "4": Valkey 9.0 and later take this; the image valkey/valkey:8.1.1 runs 8.1`}},
		{name: "an image change checks an unchanged unknown key again",
			old: config("lua-replicate-commands", "yes"), new: both(withImage("valkey/valkey:8.1.1"), config("lua-replicate-commands", "yes")),
			want: []string{"spec.config[lua-replicate-commands]: Invalid value"}},
		{name: "an unchanged owned key stays refused",
			old: config("port", "7000"), new: both(config("port", "7000"), scale),
			want: []string{"spec.config[port]: Forbidden"}},
		{name: "an unchanged config past the entry limit stays refused",
			old:  func(c *v1alpha1.ValkeyCluster) { c.Spec.Config = configOf(MaxConfigEntries + 1) },
			new:  both(func(c *v1alpha1.ValkeyCluster) { c.Spec.Config = configOf(MaxConfigEntries + 1) }, scale),
			want: []string{"spec.config: Too many: 201: must have at most 200 items"}, absent: []string{"notify-key-0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, c := validCluster(), validCluster()
			if tc.old != nil {
				tc.old(old)
			}
			tc.new(c)
			errs := ValidateClusterUpdate(old, c)
			expectErrors(t, errs, tc.want)
			for _, a := range tc.absent {
				if text := errs.ToAggregate().Error(); strings.Contains(text, a) {
					t.Errorf("want no error naming %q, got %s", a, text)
				}
			}
		})
	}
}

// TestConfigTableWarnings: what the key table refuses in a kept entry is a warning
// that names the entry, what may happen and what to do; at admission, never an entry
// that is refused.
func TestConfigTableWarnings(t *testing.T) {
	const tail = "the operator acts on this cluster all the same, but a server may refuse the entry at the next restart of a member: remove or correct it"
	stored := validCluster()
	config("lua-replicate-commands", "yes", "maxmemory", "1gb")(stored)

	got := ConfigTableWarnings(stored)
	if len(got) != 1 || !strings.HasPrefix(got[0], `spec.config[lua-replicate-commands]: Invalid value: "lua-replicate-commands": is not a configuration key`) ||
		!strings.Contains(got[0], "policy.allowedConfigKeys") || !strings.HasSuffix(got[0], tail) {
		t.Errorf("ConfigTableWarnings = %q; want one warning naming the key, the policy and %q", got, tail)
	}
	if got := ConfigTableWarnings(validCluster()); len(got) != 0 {
		t.Errorf("ConfigTableWarnings of a valid cluster = %q; want none", got)
	}

	if got := strings.Join(ClusterWarnings(stored), "\n"); strings.Contains(got, "spec.config") {
		t.Errorf("ClusterWarnings (create) = %q; want no config warning: admission refuses the key", got)
	}

	scaled := stored.DeepCopy()
	scaled.Spec.Shards = 4
	if got := strings.Join(ClusterUpdateWarnings(stored, scaled), "\n"); !strings.Contains(got, "spec.config[lua-replicate-commands]") || !strings.Contains(got, tail) {
		t.Errorf("ClusterUpdateWarnings of a kept unknown key = %q; want a warning naming it", got)
	}

	changed := scaled.DeepCopy()
	changed.Spec.Config["lua-replicate-commands"] = "no"
	changed.Spec.Config["maxmemory"] = "lots"
	if got := ClusterUpdateWarnings(stored, changed); len(got) != 0 {
		t.Errorf("ClusterUpdateWarnings of changed entries = %q; want none (admission refuses them)", got)
	}
	if errs := ValidateClusterUpdate(stored, changed); len(errs) != 2 {
		t.Errorf("ValidateClusterUpdate of two changed entries = %v; want both refused", errs)
	}
}

// TestValidateStoredCluster: the guard's rules are every rule but the key table's.
func TestValidateStoredCluster(t *testing.T) {
	c := validCluster()
	config("lua-replicate-commands", "yes", "maxmemory", "lots", "port", "7000")(c)
	expectErrors(t, ValidateStoredCluster(c), []string{"spec.config[port]: Forbidden"})
	if n := len(ValidateStoredCluster(c)); n != 1 {
		t.Errorf("ValidateStoredCluster = %v; want only the owned key", ValidateStoredCluster(c))
	}
	if n, want := len(ValidateCluster(c)), 1+len(ConfigTableErrors(c)); n != want || want != 3 {
		t.Errorf("ValidateCluster has %d errors; want the stored rules' and the key table's, 3", n)
	}
	if ConfigTableErrors(nil) != nil || len(ValidateStoredCluster(nil)) != 1 {
		t.Error("want no table error and one required error for a nil cluster")
	}
}
