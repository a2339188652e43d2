package operator

import (
	"flag"
	"fmt"

	"github.com/valkey-operator/valkey-operator/api/validation"
)

// PolicyFlags registers the administrator's admission policy (validation.Policy) on fs
// and returns the function that applies it once fs is parsed. Every component takes
// the same flags and the chart passes them the same values (its policy block), so the
// webhooks and each controller's guard agree on which specs are valid.
func PolicyFlags(fs *flag.FlagSet) func() error {
	var refuse bool
	var modules string
	maxMembers := fs.Int("max-members-per-cluster", validation.DefaultMaxMembersPerCluster,
		"largest shards x (1 + replicasPerShard) a ValkeyCluster may ask for (at least 1)")
	fs.BoolVar(&refuse, "refuse-sidecars", false,
		"refuse spec.containers entries other than patches of the server and the exporter (sidecars reach the cluster bus on localhost)")
	fs.StringVar(&modules, "allowed-modules", "",
		"comma-separated module paths (shipped in the Valkey image) that spec.config loadmodule may name; empty refuses loadmodule")
	return func() error {
		mods, err := validation.ParseModules(modules)
		if err != nil {
			return fmt.Errorf("--allowed-modules: %w", err)
		}
		if *maxMembers < 1 {
			return fmt.Errorf("--max-members-per-cluster: %d: must be at least 1 (there is no unlimited)", *maxMembers)
		}
		validation.SetPolicy(validation.Policy{RefuseSidecars: refuse, AllowedModules: mods, MaxMembersPerCluster: *maxMembers})
		return nil
	}
}
