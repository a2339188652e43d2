package acl

import (
	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// The permissions of the operator's own users. Each list holds exactly what that client
// sends; the integration tests run every command of the valkey library as _operator,
// a replica as _replication, redis_exporter as _exporter and the pod's hooks as
// _lifecycle, and check that nothing is
// refused (and that FLUSHALL, DEBUG, SHUTDOWN, ... are).
var (
	// operatorCommands are the commands of the valkey library (package valkey) that the
	// controllers run, plus MULTI/EXEC for the ACL transactions of this controller.
	// MIGRATE needs access to every key (~*); no other command of the list touches keys.
	// MIGRATE logs in to the target as _operator too and sends SELECT and
	// RESTORE-ASKING there.
	operatorCommands = []string{
		"+ping", "+info",
		"+cluster|myid", "+cluster|info", "+cluster|nodes", "+cluster|shards",
		"+cluster|meet", "+cluster|addslotsrange", "+cluster|delslotsrange",
		"+cluster|replicate", "+cluster|failover", "+cluster|forget", "+cluster|setslot", "+cluster|bumpepoch",
		"+cluster|countkeysinslot", "+cluster|getkeysinslot",
		"+migrate", "+select", "+restore-asking",
		"+config|get", "+config|set",
		"+acl|load", "+acl|setuser", "+acl|deluser", "+acl|getuser", "+acl|list",
		"+acl|users", "+acl|whoami",
		"+multi", "+exec", "+discard",
		// CLIENT LIST: a member leaving after its failover is let go once its clients
		// have moved to the new primary (no connection that sent a command since).
		"+client|list",
	}
	// operatorCommands90 are the atomic slot migration commands of Valkey 9.0.
	operatorCommands90 = []string{
		"+cluster|migrateslots", "+cluster|getslotmigrations", "+cluster|cancelslotmigrations",
	}
	// replicationCommands are what a replica sends to its primary (SYNC for
	// dual-channel replication), and CLUSTER NODES, with which a primary's server that
	// restarted asks the other members whether a replica took its slots over before it
	// starts again (the server container holds this user's password; the cluster's
	// topology is all the command tells).
	replicationCommands = []string{"+psync", "+replconf", "+ping", "+sync", "+cluster|nodes"}
	// replicationCommands90: from 9.0 the source of an atomic slot migration logs in to
	// the target as the primary user and replays the slots' keys as write commands;
	// the dangerous ones (FLUSHALL, ...) stay denied. They come before
	// replicationCommands, which -@dangerous would otherwise remove.
	replicationCommands90 = []string{"+@write", "-@dangerous", "+cluster|syncslots", "+select", "+multi", "+exec", "~*"}
	// exporterCommands are what redis_exporter 1.86 sends with its config scraping off
	// (-config-command -, which the node-controller sets): no CONFIG GET, since ACLs
	// cannot limit it to some keys and it would read primaryauth. All read-only.
	exporterCommands = []string{
		"+ping", "+info", "+cluster|info", "+slowlog|get", "+slowlog|len",
		"+latency|latest", "+latency|histogram", "+client|setname",
	}
	// lifecycleCommands are what the server container's own hooks send: INFO
	// (replication), CLUSTER FAILOVER and CLIENT LIST for the pre-stop hook of every pod, which asks a replica in sync to take over from a
	// primary that is being stopped (a coordinated failover: it loses no write and needs
	// no key access), then waits for the clients to move to the new primary (addresses
	// and command names, no values).
	lifecycleCommands = []string{"+info", "+cluster|failover", "+client|list"}
)

// systemPasswords are the passwords each system user accepts (one, or two during a
// rotation), in a fixed order.
type systemPasswords map[string][]string

// systemUserNames are the operator's users in aclfile order.
var systemUserNames = []string{v1alpha1.UserOperator, v1alpha1.UserReplication, v1alpha1.UserExporter, v1alpha1.UserLifecycle, v1alpha1.UserBackup, v1alpha1.UserRestore}

// SystemUsers renders the default user (disabled, no permission) and the operator's
// users for servers of at least version min (the zero version means 8.0).
func SystemUsers(pw systemPasswords, min valkey.Version) []User {
	op := append([]string(nil), operatorCommands...)
	repl := append([]string(nil), replicationCommands...)
	if min.AtLeast(9, 0) {
		op = append(op, operatorCommands90...)
		repl = append(append([]string(nil), replicationCommands90...), replicationCommands...)
	}
	op = append(op, "~*")
	return []User{
		{Name: "default", Rules: []string{"off", "resetchannels", "-@all"}},
		systemUser(v1alpha1.UserOperator, pw[v1alpha1.UserOperator], op),
		systemUser(v1alpha1.UserReplication, pw[v1alpha1.UserReplication], repl),
		systemUser(v1alpha1.UserExporter, pw[v1alpha1.UserExporter], exporterCommands),
		systemUser(v1alpha1.UserLifecycle, pw[v1alpha1.UserLifecycle], lifecycleCommands),
	}
}

// systemUser renders one of the operator's users: on, its password hashes, no channel,
// no command but perms.
func systemUser(name string, passwords, perms []string) User {
	rules := []string{"on"}
	rules = append(rules, passwordRules(false, passwords)...)
	rules = append(rules, "resetchannels", "-@all")
	rules = append(rules, perms...)
	return User{Name: name, Rules: rules}
}
