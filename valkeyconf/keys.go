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

// RefusedKey is one configuration key (or, ending in '-', a family of keys) that a
// spec may not set, and why.
type RefusedKey struct {
	// Key is the normalised name; a trailing '-' makes it a prefix.
	Key string
	// Owned is true for keys the operator sets itself (or that must stay at Valkey's
	// default for the operator to work); false for keys refused because they would let
	// whoever edits a ValkeyCluster run code in the server or read its memory.
	Owned bool
	// Why the key is refused, as the API reference and the refusal say it.
	Why string
}

// RefusedKeys is the one table of the keys a spec may not set: validation refuses
// them, the renderer never writes them from a spec, and the API reference lists them
// (make generate). loadmodule is the one an administrator may open, for named module
// paths only (validation.Policy, the chart's config.allowedModules).
var RefusedKeys = []RefusedKey{
	{"aclfile", true, "users come from the aclfile the acl-controller writes"},
	{"bind", true, "the operator and the Services connect to the pod address"},
	{"bind-source-addr", true, "the operator and the Services connect to the pod address"},
	{"cluster-allow-replica-migration", true, "replicas stay in the shard the operator put them in; the operator moves replicas itself"},
	{"cluster-announce-", true, "the address peers and clients use is the pod's, set at start from the pod IP"},
	{"cluster-config-file", true, "nodes.conf lives where the operator keeps state"},
	{"cluster-enabled", true, "the operator only runs cluster mode"},
	{"cluster-port", true, "the bus port is the client port + 10000, which Services, NetworkPolicies and peers assume"},
	{"daemonize", true, "the container runs the server in the foreground"},
	{"dir", true, "data lives on the volume the operator mounts (dbfilename and appenddirname stay the user's)"},
	{"enable-debug-command", false, "DEBUG reads and corrupts server memory, crashes the server and changes its settings at run time"},
	{"enable-module-command", false, "MODULE LOAD runs any shared library the server can read, bypassing the allowed module paths"},
	{"enable-protected-configs", true, "would let clients change dir and other owned paths at run time"},
	{"include", true, "could pull arbitrary files into the config"},
	{"loadmodule", false, "a module is native code running inside the server with its privileges and memory; an administrator may allow named module paths shipped in the image"},
	{"logfile", true, "logs go to stdout for the container runtime"},
	{"masterauth", true, "replication credentials come from the system users Secret"},
	{"masteruser", true, "replication credentials come from the system users Secret"},
	{"pidfile", true, "the container runs the server in the foreground"},
	{"port", true, "the operator, the Services and the NetworkPolicy use the port it chose"},
	{"primaryauth", true, "replication credentials come from the system users Secret"},
	{"primaryuser", true, "replication credentials come from the system users Secret"},
	{"protected-mode", true, "peers must reach the server on the pod address"},
	{"rename-command", true, "would hide commands the operator runs"},
	{"replica-announce-ip", true, "must match the pod's address"},
	{"replica-announce-port", true, "must match the pod's address"},
	{"replicaof", true, "replication is set by the operator (and cluster mode refuses it)"},
	{"requirepass", true, "users come from the aclfile; requirepass would bypass it"},
	{"slave-announce-ip", true, "must match the pod's address"},
	{"slave-announce-port", true, "must match the pod's address"},
	{"slaveof", true, "replication is set by the operator (and cluster mode refuses it)"},
	{"supervised", true, "the container runs the server in the foreground"},
	{"tls-", true, "certificates and TLS modes are rolled by the tls-controller"},
	{"unixsocket", true, "the operator and the Services connect to the pod address"},
	{"user", true, "users come from the aclfile; inline users would bypass it"},
}

// OwnedKeys are the keys of RefusedKeys the operator sets itself, in table order.
var OwnedKeys = refusedNames(true)

// UnsafeKeys are the keys of RefusedKeys refused for what they would let a spec do
// (native code, debugging commands), in table order.
var UnsafeKeys = refusedNames(false)

func refusedNames(owned bool) []string {
	var out []string
	for _, r := range RefusedKeys {
		if r.Owned == owned {
			out = append(out, r.Key)
		}
	}
	return out
}

// Refused returns the entry of RefusedKeys that key (any spelling) matches.
func Refused(key string) (RefusedKey, bool) {
	k := Normalize(key)
	for _, r := range RefusedKeys {
		if strings.HasSuffix(r.Key, "-") {
			if strings.HasPrefix(k, r.Key) {
				return r, true
			}
		} else if k == r.Key {
			return r, true
		}
	}
	return RefusedKey{}, false
}

// Owned reports whether key (any spelling) is owned by the operator.
func Owned(key string) bool {
	r, ok := Refused(key)
	return ok && r.Owned
}

// LoadModule is the key whose values an administrator may allow by module path.
const LoadModule = "loadmodule"

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
