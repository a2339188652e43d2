// Command cluster-controller reconciles ValkeyClusters: members, topology, slots,
// failover, rolls and scaling. It coordinates with the other controllers only through
// status conditions (see docs/status-contract.md).
package main

import (
	"github.com/valkey-operator/valkey-operator/cluster-controller/component"
	"github.com/valkey-operator/valkey-operator/internal/operator"
)

func main() { operator.Main(component.New()) }
