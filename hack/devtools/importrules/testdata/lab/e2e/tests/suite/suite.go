// Package suite imports the local Kubernetes past the framework on purpose: the import
// check must refuse it.
package suite

import "github.com/valkey-operator/valkey-operator/localkube"

// Bridge is the forbidden use.
var Bridge = localkube.BridgeIP
