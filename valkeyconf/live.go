package valkeyconf

// liveKey is a key that CONFIG SET may change on a running server from the
// given version on, with the value Valkey gives it when no config sets it (the same on
// every supported version; TestValkeyDefaults checks it against a real server).
type liveKey struct {
	key           string
	major, minor  int
	valkeyDefault string
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
	{"acllog-max-len", 8, 0, "128"},
	{"active-defrag-cycle-max", 8, 0, "25"},
	{"active-defrag-cycle-min", 8, 0, "1"},
	{"active-defrag-ignore-bytes", 8, 0, "104857600"},
	{"active-defrag-max-scan-fields", 8, 0, "1000"},
	{"active-defrag-threshold-lower", 8, 0, "10"},
	{"active-defrag-threshold-upper", 8, 0, "100"},
	{"activedefrag", 8, 0, "no"},
	{"activerehashing", 8, 0, "yes"},
	{"appendfsync", 8, 0, "everysec"},
	{"busy-reply-threshold", 8, 0, "5000"},
	{"client-output-buffer-limit", 8, 0, "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"},
	{"client-query-buffer-limit", 8, 0, "1073741824"},
	{"cluster-allow-pubsubshard-when-down", 8, 0, "yes"},
	{"cluster-allow-reads-when-down", 8, 0, "no"},
	{"cluster-manual-failover-timeout", 8, 1, "5000"},
	{"cluster-node-timeout", 8, 0, "15000"},
	{"cluster-replica-no-failover", 8, 0, "no"},
	{"cluster-replica-validity-factor", 8, 0, "10"},
	{"cluster-require-full-coverage", 8, 0, "yes"},
	{"cluster-slot-migration-log-max-len", 9, 0, "1000"},
	{"hash-max-listpack-entries", 8, 0, "512"},
	{"hash-max-listpack-value", 8, 0, "64"},
	{"hll-sparse-max-bytes", 8, 0, "3000"},
	{"hz", 8, 0, "10"},
	{"latency-monitor-threshold", 8, 0, "0"},
	{"latency-tracking", 8, 0, "yes"},
	{"latency-tracking-info-percentiles", 8, 0, "50 99 99.9"},
	{"lazyfree-lazy-eviction", 8, 0, "yes"},
	{"lazyfree-lazy-expire", 8, 0, "yes"},
	{"lazyfree-lazy-server-del", 8, 0, "yes"},
	{"lazyfree-lazy-user-del", 8, 0, "yes"},
	{"lazyfree-lazy-user-flush", 8, 0, "yes"},
	{"list-compress-depth", 8, 0, "0"},
	{"list-max-listpack-size", 8, 0, "-2"},
	{"loglevel", 8, 0, "notice"},
	{"lua-time-limit", 8, 0, "5000"},
	{"maxclients", 8, 0, "10000"},
	{"maxmemory", 8, 0, "0"},
	{"maxmemory-clients", 8, 0, "0"},
	{"maxmemory-eviction-tenacity", 8, 0, "10"},
	{"maxmemory-policy", 8, 0, "noeviction"},
	{"maxmemory-samples", 8, 0, "5"},
	{"min-replicas-max-lag", 8, 0, "10"},
	{"min-replicas-to-write", 8, 0, "0"},
	{"notify-keyspace-events", 8, 0, ""},
	{"proto-max-bulk-len", 8, 0, "536870912"},
	{"repl-backlog-size", 8, 0, "10485760"},
	{"repl-backlog-ttl", 8, 0, "3600"},
	{"repl-diskless-sync", 8, 0, "yes"},
	{"repl-diskless-sync-delay", 8, 0, "5"},
	{"repl-diskless-sync-max-replicas", 8, 0, "0"},
	{"repl-timeout", 8, 0, "60"},
	{"replica-lazy-flush", 8, 0, "yes"},
	{"replica-priority", 8, 0, "100"},
	{"save", 8, 0, "3600 1 300 100 60 10000"},
	{"set-max-intset-entries", 8, 0, "512"},
	{"set-max-listpack-entries", 8, 0, "128"},
	{"set-max-listpack-value", 8, 0, "64"},
	{"shutdown-on-sigterm", 8, 0, "default"},
	{"shutdown-timeout", 8, 0, "10"},
	{"slowlog-log-slower-than", 8, 0, "10000"},
	{"slowlog-max-len", 8, 0, "128"},
	{"stream-node-max-bytes", 8, 0, "4096"},
	{"stream-node-max-entries", 8, 0, "100"},
	{"tcp-keepalive", 8, 0, "300"},
	{"timeout", 8, 0, "0"},
	{"zset-max-listpack-entries", 8, 0, "128"},
	{"zset-max-listpack-value", 8, 0, "64"},
}

// LiveKeys returns the keys that Live accepts for version v, sorted. A zero Version
// counts as Oldest.
func LiveKeys(v Version) []string {
	v = orOldest(v)
	var out []string
	for _, k := range liveKeys {
		if v.AtLeast(k.major, k.minor) {
			out = append(out, k.key)
		}
	}
	return out
}

// Live reports whether key (any spelling) may be changed on a running server of version
// v with CONFIG SET, without a restart. A zero Version counts as Oldest.
func Live(key string, v Version) bool {
	v = orOldest(v)
	k := Normalize(key)
	for _, lk := range liveKeys {
		if lk.key == k {
			return v.AtLeast(lk.major, lk.minor) && !Owned(k)
		}
	}
	return false
}

// UnsetValue is the value a server of version v runs with when the config does not set
// key: the operator's default for that version if it has one, else Valkey's own. The
// node-controller sets it when a live key leaves the spec, so the running server matches
// what a restart would give it. ok is false for a key that is not live on v.
func UnsetValue(key string, v Version) (value string, ok bool) {
	k := Normalize(key)
	if !Live(k, v) {
		return "", false
	}
	for _, d := range Defaults(v) {
		if d.Key == k {
			return d.Value, true
		}
	}
	return ValkeyDefault(k)
}

// ValkeyDefault is the value Valkey itself gives a live key when no config sets it (the
// operator's defaults aside; see UnsetValue).
func ValkeyDefault(key string) (string, bool) {
	k := Normalize(key)
	for _, lk := range liveKeys {
		if lk.key == k {
			return lk.valkeyDefault, true
		}
	}
	return "", false
}
