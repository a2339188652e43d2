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
//
// What a Client reads from a server is bounded by Options.MaxReplyBytes (8 MiB by
// default), checked before rueidis allocates anything for a reply: a larger reply
// fails with an error wrapping ErrReplyTooLarge (a *ReplyTooLargeError naming the
// command and the server) and its connection is replaced (see replylimit.go).
package valkey
