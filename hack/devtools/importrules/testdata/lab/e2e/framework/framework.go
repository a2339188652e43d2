// Package framework imports the local Kubernetes as its provider: the import check allows it.
package framework

import "github.com/valkey-operator/valkey-operator/localkube"

// HostIP is the allowed use.
var HostIP = localkube.BridgeIP
