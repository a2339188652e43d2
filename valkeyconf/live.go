package valkeyconf

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
