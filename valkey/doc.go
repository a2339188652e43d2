// Package valkey is the Valkey admin library shared by every controller of the
// operator. It talks to exactly one Valkey server per Client (never a cluster
// client: the controllers decide which node gets which command), parses what
// the server reports (CLUSTER NODES, CLUSTER SHARDS, INFO, ACL GETUSER), plans
// slot moves, and renders valkey.conf.
//
// The package has no Kubernetes dependency. Parsers are pure functions that
// return errors instead of panicking, so they are safe on any server output.
//
// Errors that come from the server itself (for example a refused CONFIG SET)
// are *ServerError values; use IsServerError or ServerMessage to tell them
// apart from network errors and to show the server's own words in a status
// condition. Secrets (passwords, password hashes) never appear in an error
// string produced by this package.
package valkey
