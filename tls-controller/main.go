// Command tls-controller keeps the certificates of every ValkeyCluster with TLS: it
// checks the user's certificate Secret, or has cert-manager issue and renew one
// (spec.tls.certManager), copies it once it passes into the Secret the pods mount
// ({cluster}-tls-accepted), reloads it live on every member, and warns before it expires.
package main

import (
	"github.com/valkey-operator/valkey-operator/internal/operator"
	"github.com/valkey-operator/valkey-operator/tls-controller/component"
)

func main() { operator.Main(component.New()) }
