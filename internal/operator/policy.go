package operator

import (
	"flag"
	"fmt"
	"os"

	"github.com/valkey-operator/valkey-operator/api/validation"
)

// PolicyFlags registers the administrator's admission policy (validation.Policy) on fs
// and returns the function that applies it once fs is parsed. Every component takes
// the same flags and the chart passes them the same values (its policy block), so the
// webhooks and each controller's guard agree on which specs are valid.
func PolicyFlags(fs *flag.FlagSet) func() error {
	return policyFlags(fs, os.Getenv)
}

// policyFlags is PolicyFlags reading the environment through getenv.
func policyFlags(fs *flag.FlagSet, getenv func(string) string) func() error {
	var refuse bool
	var modules, configKeys, allowedEndpoints, apiAddresses, profile, types, annotations, suffixes string
	maxMembers := fs.Int("max-members-per-cluster", validation.DefaultMaxMembersPerCluster,
		"largest shards x (1 + replicasPerShard) a ValkeyCluster may ask for (at least 1)")
	minInterval := fs.Duration("min-backup-interval", validation.DefaultMinBackupInterval,
		"least time between two backups of a ValkeyBackupSchedule (at least 1m)")
	fs.BoolVar(&refuse, "refuse-sidecars", false,
		"refuse spec.containers entries other than patches of the server and the exporter (sidecars reach the cluster bus on localhost)")
	fs.StringVar(&modules, "allowed-modules", "",
		"comma-separated module paths (shipped in the Valkey image) that spec.config loadmodule may name; empty refuses loadmodule")
	fs.StringVar(&configKeys, validation.FlagAllowedConfigKeys, "",
		"comma-separated spec.config keys that no supported Valkey has, admitted all the same (keys of a newer Valkey your images run); their values are not checked")
	fs.StringVar(&allowedEndpoints, validation.FlagAllowedEndpoints, "",
		"comma-separated host name suffixes (minio.storage.svc, .example.com) and CIDRs; when set, the only object-store endpoints admitted")
	fs.StringVar(&apiAddresses, validation.FlagKubernetesAPIAddresses, "",
		"comma-separated addresses or CIDRs of the Kubernetes API server, refused as object-store endpoints "+
			"(the Service address in KUBERNETES_SERVICE_HOST is refused without being listed)")
	fs.StringVar(&profile, validation.FlagPolicyProfile, string(validation.ProfileDefault),
		"default, or multiTenant: sidecars refused, external access only as the external-access lists admit (empty lists admit none), every cluster's NetworkPolicy kept")
	fs.StringVar(&types, validation.FlagExternalAccessTypes, "",
		"comma-separated spec.externalAccess types admitted (NodePort, LoadBalancer); when set (or in the multiTenant profile), the only ones")
	fs.StringVar(&annotations, validation.FlagExternalAccessAnnotations, "",
		"comma-separated Service annotation keys spec.externalAccess.annotations may set (a key, or a prefix ending in /); when set (or in the multiTenant profile), the only ones")
	fs.StringVar(&suffixes, validation.FlagExternalAccessHostnameSuffixes, "",
		"comma-separated DNS suffixes (.valkey.example.com) a hostnameTemplate must end with; when set (or in the multiTenant profile), the only ones")
	return func() error {
		pol := validation.Policy{RefuseSidecars: refuse, MaxMembersPerCluster: *maxMembers, MinBackupInterval: *minInterval}
		var err error
		if pol.Profile, err = validation.ParseProfile(profile); err != nil {
			return err
		}
		if pol.ExternalAccess, err = validation.ParseExternalAccessPolicy(types, annotations, suffixes); err != nil {
			return err
		}
		if pol.AllowedModules, err = validation.ParseModules(modules); err != nil {
			return fmt.Errorf("--allowed-modules: %w", err)
		}
		if pol.AllowedConfigKeys, err = validation.ParseConfigKeys(configKeys); err != nil {
			return err
		}
		if *maxMembers < 1 {
			return fmt.Errorf("--max-members-per-cluster: %d: must be at least 1 (there is no unlimited)", *maxMembers)
		}
		if *minInterval < validation.MinBackupIntervalFloor {
			return fmt.Errorf("--min-backup-interval: %s: must be at least %s", *minInterval, validation.ShortDuration(validation.MinBackupIntervalFloor))
		}
		if pol.ObjectStore, err = validation.ParseEndpointPolicy(allowedEndpoints, apiAddresses); err != nil {
			return err
		}
		// The API server's Service address, as every pod sees it (a name there is left
		// to the endpoint policy's refused names).
		if service, err := validation.ParseNetworks(getenv("KUBERNETES_SERVICE_HOST")); err == nil {
			pol.ObjectStore.APIServer = append(pol.ObjectStore.APIServer, service...)
		}
		validation.SetPolicy(pol)
		return nil
	}
}
