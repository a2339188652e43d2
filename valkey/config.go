package valkey

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// TLSFiles are the paths of the server's certificate, key and CA bundle.
type TLSFiles struct {
	CertFile, KeyFile, CAFile string
}

// ServerConfig is what RenderConfig needs to write valkey.conf.
type ServerConfig struct {
	// Port is the client port: the plain one, or the TLS one when TLS is set
	// (then the plain port is closed). The cluster bus is Port+10000.
	Port int
	// TLS, when set, turns TLS on for clients, the cluster bus and
	// replication.
	TLS *TLSFiles
	// Bind lists the addresses to listen on. Empty: "* -::*" (every
	// address; in Kubernetes the pod has one).
	Bind []string
	// DataDir is the working directory (RDB/AOF and, when relative, the
	// cluster config file).
	DataDir string
	// ClusterConfigFile is the nodes.conf the server owns.
	ClusterConfigFile string
	// ACLFile is the users file (loaded at start and by ACL LOAD).
	ACLFile string
	// PrimaryUser is the user a replica authenticates as to its primary.
	PrimaryUser string
	// PrimaryAuthInclude is the path of a file that holds the line
	// "masterauth <password>"; it is included so that the rendered config
	// holds no secret.
	PrimaryAuthInclude string
	// Version is the server version the config is for; the zero value means
	// the oldest supported (8.0). Defaults that only newer servers accept are
	// rendered only when Version allows them.
	Version Version
	// User is the configuration the user asked for. Operator-owned keys and
	// malformed keys in it are never rendered.
	User map[string]string
}

// OperatorOwnedKeys are the configuration keys the operator sets itself (or
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
var OperatorOwnedKeys = []string{
	"aclfile", "bind", "bind-source-addr",
	"cluster-allow-replica-migration", "cluster-announce-", "cluster-config-file",
	"cluster-enabled", "cluster-port", "daemonize", "dir",
	"enable-protected-configs", "include", "logfile", "masterauth", "masteruser",
	"pidfile", "port", "primaryauth", "primaryuser", "protected-mode",
	"rename-command", "replica-announce-ip", "replica-announce-port", "replicaof",
	"requirepass", "slave-announce-ip", "slave-announce-port", "slaveof",
	"supervised", "tls-", "unixsocket", "user",
}

// IsOperatorOwned reports whether key (any case) is owned by the operator.
func IsOperatorOwned(key string) bool {
	k := strings.ToLower(strings.TrimSpace(key))
	for _, owned := range OperatorOwnedKeys {
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

// IsValidConfigKey reports whether key can be written as a config directive
// name: lower/upper case letters, digits and '-', '_', '.'.
func IsValidConfigKey(key string) bool {
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

// NodeTimeout is the cluster-node-timeout a server runs with: the user's value when it
// is a positive number of milliseconds, else the operator's default.
func NodeTimeout(user map[string]string) time.Duration {
	if v, ok := user["cluster-node-timeout"]; ok {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	for _, d := range operatorDefaults {
		if d.key == "cluster-node-timeout" {
			ms, _ := strconv.ParseInt(d.value, 10, 64)
			return time.Duration(ms) * time.Millisecond
		}
	}
	return 15 * time.Second // Valkey's own default
}

// operatorDefaults are rendered after the owned keys and may be overridden
// by the user's config (a later directive wins in valkey.conf):
//
//   - cluster-node-timeout 5000: detect a dead primary in about 6 s instead
//     of 16 s (Valkey's default is 15000), still tolerant of short pauses.
//   - repl-diskless-sync-delay 0: the operator adds replicas one at a time,
//     so waiting 5 s to batch full syncs only delays each new replica.
//   - shutdown-on-sigterm failover (9.0+ only; 8.x refuses the value): a
//     primary that gets SIGTERM hands its slots to a replica before it exits.
var operatorDefaults = []struct {
	key, value   string
	major, minor int // first version that accepts the value
}{
	{"cluster-node-timeout", "5000", 0, 0},
	{"repl-diskless-sync-delay", "0", 0, 0},
	{"shutdown-on-sigterm", "failover", 9, 0},
}

// RenderConfig renders valkey.conf: the operator's keys, then the operator's
// defaults, then the user's keys sorted by name. The same input always gives
// the same bytes. Every value is quoted so that no value can add a
// directive.
func RenderConfig(c ServerConfig) []byte {
	var b bytes.Buffer
	b.WriteString("# Rendered by valkey-operator. Changes here are overwritten.\n")
	writeOwned(&b, c)
	b.WriteString("\n# Operator defaults (the user's config may override them).\n")
	for _, d := range operatorDefaults {
		if c.Version.AtLeast(d.major, d.minor) {
			directive(&b, d.key, d.value)
		}
	}
	b.WriteString("\n# User config.\n")
	for _, k := range userKeys(c.User) {
		directive(&b, strings.ToLower(k), c.User[k])
	}
	return b.Bytes()
}

// writeOwned writes the operator-owned directives in a fixed order.
func writeOwned(b *bytes.Buffer, c ServerConfig) {
	directive(b, "cluster-enabled", "yes")
	directive(b, "cluster-config-file", c.ClusterConfigFile)
	directive(b, "cluster-allow-replica-migration", "no")
	directive(b, "daemonize", "no")
	directive(b, "logfile", "")
	directive(b, "protected-mode", "no")
	bind := c.Bind
	if len(bind) == 0 {
		bind = []string{"*", "-::*"}
	}
	directive(b, "bind", bind...)
	if c.TLS == nil {
		directive(b, "port", strconv.Itoa(c.Port))
	} else {
		writeTLS(b, c.Port, *c.TLS)
	}
	directive(b, "dir", c.DataDir)
	if c.ACLFile != "" {
		directive(b, "aclfile", c.ACLFile)
	}
	if c.PrimaryUser != "" {
		directive(b, "masteruser", c.PrimaryUser)
	}
	if c.PrimaryAuthInclude != "" {
		directive(b, "include", c.PrimaryAuthInclude)
	}
}

func writeTLS(b *bytes.Buffer, port int, t TLSFiles) {
	directive(b, "port", "0")
	directive(b, "tls-port", strconv.Itoa(port))
	directive(b, "tls-cert-file", t.CertFile)
	directive(b, "tls-key-file", t.KeyFile)
	directive(b, "tls-ca-cert-file", t.CAFile)
	directive(b, "tls-cluster", "yes")
	directive(b, "tls-replication", "yes")
	directive(b, "tls-auth-clients", "optional")
}

// userKeys returns the renderable user keys, sorted by lower-case name then
// by the key as written (so two spellings of one key render in a fixed
// order; the later one wins in the server).
func userKeys(user map[string]string) []string {
	keys := make([]string, 0, len(user))
	for k := range user {
		if IsValidConfigKey(k) && !IsOperatorOwned(k) {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		li, lj := strings.ToLower(keys[i]), strings.ToLower(keys[j])
		if li != lj {
			return li < lj
		}
		return keys[i] < keys[j]
	})
	return keys
}

// directive writes "key value..." with every value quoted.
func directive(b *bytes.Buffer, key string, values ...string) {
	b.WriteString(key)
	for _, v := range values {
		b.WriteByte(' ')
		b.WriteString(QuoteConfigValue(v))
	}
	b.WriteByte('\n')
}

// QuoteConfigValue quotes v for valkey.conf, whose lines are split like
// sdssplitargs: inside double quotes, backslash escapes \" \\ \n \r \t \a \b
// and \xHH are understood. A value without special characters is returned
// as is; any other is quoted with every control or non-ASCII byte escaped,
// so the value stays on one line and reads back byte for byte.
func QuoteConfigValue(v string) string {
	if v != "" && isPlain(v) {
		return v
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		b.WriteString(escapeByte(v[i]))
	}
	b.WriteByte('"')
	return b.String()
}

// isPlain reports whether v needs no quoting.
func isPlain(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("-_.:/@+,=*%", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

func escapeByte(c byte) string {
	switch c {
	case '"':
		return `\"`
	case '\\':
		return `\\`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	if c < 0x20 || c >= 0x7f {
		return fmt.Sprintf(`\x%02x`, c)
	}
	return string(c)
}

// liveKey is a key that CONFIG SET may change on a running server from the
// given version on.
type liveKey struct {
	key          string
	major, minor int
}

// liveKeys are the keys the operator applies with CONFIG SET instead of a
// rolling restart. Each is mutable at run time on the versions listed, and
// changing it touches only the running process: limits and eviction
// (maxmemory*, maxclients, client buffers), timeouts, logging and latency
// monitoring, background housekeeping (hz, lazyfree-*, active defrag),
// encodings used for new values (*-listpack-*), failover and replication
// tuning. Left out on purpose: keys that need a restart (io-threads,
// databases), keys the operator owns, and appendonly, whose change starts
// an AOF rewrite that the operator would rather roll.
var liveKeys = []liveKey{
	{"acllog-max-len", 8, 0},
	{"active-defrag-cycle-max", 8, 0},
	{"active-defrag-cycle-min", 8, 0},
	{"active-defrag-ignore-bytes", 8, 0},
	{"active-defrag-max-scan-fields", 8, 0},
	{"active-defrag-threshold-lower", 8, 0},
	{"active-defrag-threshold-upper", 8, 0},
	{"activedefrag", 8, 0},
	{"activerehashing", 8, 0},
	{"appendfsync", 8, 0},
	{"busy-reply-threshold", 8, 0},
	{"client-output-buffer-limit", 8, 0},
	{"client-query-buffer-limit", 8, 0},
	{"cluster-allow-pubsubshard-when-down", 8, 0},
	{"cluster-allow-reads-when-down", 8, 0},
	{"cluster-manual-failover-timeout", 8, 1},
	{"cluster-node-timeout", 8, 0},
	{"cluster-replica-no-failover", 8, 0},
	{"cluster-replica-validity-factor", 8, 0},
	{"cluster-require-full-coverage", 8, 0},
	{"cluster-slot-migration-log-max-len", 9, 0},
	{"hash-max-listpack-entries", 8, 0},
	{"hash-max-listpack-value", 8, 0},
	{"hll-sparse-max-bytes", 8, 0},
	{"hz", 8, 0},
	{"latency-monitor-threshold", 8, 0},
	{"latency-tracking", 8, 0},
	{"latency-tracking-info-percentiles", 8, 0},
	{"lazyfree-lazy-eviction", 8, 0},
	{"lazyfree-lazy-expire", 8, 0},
	{"lazyfree-lazy-server-del", 8, 0},
	{"lazyfree-lazy-user-del", 8, 0},
	{"lazyfree-lazy-user-flush", 8, 0},
	{"list-compress-depth", 8, 0},
	{"list-max-listpack-size", 8, 0},
	{"loglevel", 8, 0},
	{"lua-time-limit", 8, 0},
	{"maxclients", 8, 0},
	{"maxmemory", 8, 0},
	{"maxmemory-clients", 8, 0},
	{"maxmemory-eviction-tenacity", 8, 0},
	{"maxmemory-policy", 8, 0},
	{"maxmemory-samples", 8, 0},
	{"min-replicas-max-lag", 8, 0},
	{"min-replicas-to-write", 8, 0},
	{"notify-keyspace-events", 8, 0},
	{"proto-max-bulk-len", 8, 0},
	{"repl-backlog-size", 8, 0},
	{"repl-backlog-ttl", 8, 0},
	{"repl-diskless-sync", 8, 0},
	{"repl-diskless-sync-delay", 8, 0},
	{"repl-diskless-sync-max-replicas", 8, 0},
	{"repl-timeout", 8, 0},
	{"replica-lazy-flush", 8, 0},
	{"replica-priority", 8, 0},
	{"save", 8, 0},
	{"set-max-intset-entries", 8, 0},
	{"set-max-listpack-entries", 8, 0},
	{"set-max-listpack-value", 8, 0},
	{"shutdown-on-sigterm", 8, 0},
	{"shutdown-timeout", 8, 0},
	{"slowlog-log-slower-than", 8, 0},
	{"slowlog-max-len", 8, 0},
	{"stream-node-max-bytes", 8, 0},
	{"stream-node-max-entries", 8, 0},
	{"tcp-keepalive", 8, 0},
	{"timeout", 8, 0},
	{"zset-max-listpack-entries", 8, 0},
	{"zset-max-listpack-value", 8, 0},
}

// LiveKeys returns the keys that IsLiveKey accepts for version v, sorted. A
// zero Version counts as 8.0.
func LiveKeys(v Version) []string {
	v = orBaseline(v)
	var out []string
	for _, k := range liveKeys {
		if v.AtLeast(k.major, k.minor) {
			out = append(out, k.key)
		}
	}
	return out
}

// IsLiveKey reports whether key (any case) may be changed on a running
// server of version v with CONFIG SET, without a restart. A zero Version
// counts as 8.0.
func IsLiveKey(key string, v Version) bool {
	v = orBaseline(v)
	k := strings.ToLower(strings.TrimSpace(key))
	for _, lk := range liveKeys {
		if lk.key == k {
			return v.AtLeast(lk.major, lk.minor) && !IsOperatorOwned(k)
		}
	}
	return false
}

// orBaseline maps the zero Version to the oldest supported one, 8.0.
func orBaseline(v Version) Version {
	if v == (Version{}) {
		return Version{Major: 8}
	}
	return v
}
