// Command node-controller runs the operator's node-controller: each ValkeyNode becomes
// one running Valkey server (ConfigMap, workload, pod, claim) with its status.
package main

import (
	"github.com/valkey-operator/valkey-operator/internal/operator"
	"github.com/valkey-operator/valkey-operator/node-controller/component"
)

func main() { operator.Main(component.New()) }
