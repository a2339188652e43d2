// Command acl-controller keeps the ACL of every ValkeyCluster: the system users' Secret,
// the aclfile Secret, the live users on every member, and password rotations.
package main

import (
	"github.com/valkey-operator/valkey-operator/acl-controller/component"
	"github.com/valkey-operator/valkey-operator/internal/operator"
)

func main() { operator.Main(component.New()) }
