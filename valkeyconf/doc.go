// Package valkeyconf holds the operator's rules about Valkey configuration keys, one table
// per rule:
//
//   - how a key is spelled: Normalize (Valkey reads keys case-insensitively; every
//     consumer reads the normalised form, so "Cluster-Node-Timeout" and
//     "cluster-node-timeout" are one key everywhere);
//   - which keys a spec may not set (RefusedKeys: those the operator owns, and those
//     that would run code in the server or debug it);
//   - which keys a running server takes with CONFIG SET, per version (LiveKeys);
//   - the defaults the operator renders (Defaults), and what the operator derives from
//     the config: the node timeout, the manual failover timeout and the grace period a
//     primary needs to hand over its slots.
//
// The tables are data, so the API reference (make generate) lists them as they are.
package valkeyconf
