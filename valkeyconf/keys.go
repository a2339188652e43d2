package valkeyconf

import (
	"sort"
	"strings"
)

// Normalize returns key as Valkey reads it: without surrounding spaces, in lower case.
func Normalize(key string) string { return strings.ToLower(strings.TrimSpace(key)) }

// Normalized returns config with every key normalised, leaving out keys that are not
// valid names. When two spellings of one key are given (validation refuses that, but a
// spec stored without the webhook may hold it), the value of the spelling that sorts
// last wins, as in the rendered file, where the later directive wins.
func Normalized(config map[string]string) map[string]string {
	if config == nil {
		return nil
	}
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]string, len(config))
	for _, k := range keys {
		if ValidName(k) {
			out[Normalize(k)] = config[k]
		}
	}
	return out
}

// Lookup returns the value of key (given normalised) in config, whatever the spelling
// there.
func Lookup(config map[string]string, key string) (string, bool) {
	if v, ok := config[key]; ok {
		return v, true
	}
	v, ok := Normalized(config)[key]
	return v, ok
}

// OwnedKeys are the configuration keys the operator sets itself (or
// must stay at Valkey's default) and a user may not set. Entries ending in
// '-' are prefix families. Why each is owned:
//
//   - cluster-enabled, cluster-config-file: the operator only runs cluster
//     mode, and nodes.conf lives where the operator keeps state.
//   - cluster-port: the bus port is Port+10000, which Services and peers
//     assume.
//   - cluster-announce-*: the address peers and clients use is the pod's,
//     set by the operator (at start, from the pod IP).
//   - cluster-allow-replica-migration: replicas must stay in the shard the
//     operator put them in (shard labels and status follow that); the
//     operator moves replicas itself.
//   - port, bind, bind-source-addr, unixsocket: the operator and the
//     Services connect to the port it chose, on the pod address.
//   - tls-*: certificates and TLS modes are rolled by the tls-controller.
//   - dir: data lives on the volume the operator mounts (file names inside
//     it, dbfilename and appenddirname, stay the user's).
//   - aclfile, requirepass, user: users come from the aclfile the
//     acl-controller writes; requirepass or inline users would bypass it.
//   - masterauth, masteruser, primaryauth, primaryuser: replication
//     credentials come from the system users Secret.
//   - include: could pull arbitrary files into the config.
//   - rename-command: would hide commands the operator runs.
//   - replicaof, slaveof: replication is set by the operator (and cluster
//     mode refuses it anyway).
//   - replica-announce-ip, replica-announce-port, slave-announce-ip,
//     slave-announce-port: must match the pod's address.
//   - daemonize, supervised, pidfile: the container runs the server in the
//     foreground.
//   - logfile: logs go to stdout for the container runtime.
//   - protected-mode: peers must reach the server on the pod address.
//   - enable-protected-configs: would let clients change dir and other
//     owned paths at run time.
var OwnedKeys = []string{
	"aclfile", "bind", "bind-source-addr",
	"cluster-allow-replica-migration", "cluster-announce-", "cluster-config-file",
	"cluster-enabled", "cluster-port", "daemonize", "dir",
	"enable-protected-configs", "include", "logfile", "masterauth", "masteruser",
	"pidfile", "port", "primaryauth", "primaryuser", "protected-mode",
	"rename-command", "replica-announce-ip", "replica-announce-port", "replicaof",
	"requirepass", "slave-announce-ip", "slave-announce-port", "slaveof",
	"supervised", "tls-", "unixsocket", "user",
}

// Owned reports whether key (any spelling) is owned by the operator.
func Owned(key string) bool {
	k := Normalize(key)
	for _, owned := range OwnedKeys {
		if strings.HasSuffix(owned, "-") {
			if strings.HasPrefix(k, owned) {
				return true
			}
		} else if k == owned {
			return true
		}
	}
	return false
}

// ValidName reports whether key can be written as a config directive name: lower/upper
// case letters, digits and '-', '_', '.'.
func ValidName(key string) bool {
	if key == "" {
		return false
	}
	for _, r := range key {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
		if !ok {
			return false
		}
	}
	return true
}
