// Package admit imports the local Kubernetes on purpose: the import check must refuse it.
package admit

import "github.com/valkey-operator/valkey-operator/localkube"

// Bridge is the forbidden use.
var Bridge = localkube.BridgeIP
