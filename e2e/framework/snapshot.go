package framework

import (
	"context"
	"fmt"
)

// HostSnapshot returns the host state the local cluster touches (`localkube snapshot`):
// processes, mounts, namespaces, links, routes, firewall rules, cgroups and sysctls.
// Only the local provider has one.
func (k *Cluster) HostSnapshot(ctx context.Context) (string, error) {
	p, ok := k.Provider.(*LocalProvider)
	if !ok {
		return "", fmt.Errorf("host snapshots exist for the local provider only (this is %s)", k.Provider.ProviderName())
	}
	return p.Snapshot(ctx)
}
