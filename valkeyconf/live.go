package valkeyconf

import "slices"

// liveKeys are the keys the operator applies with CONFIG SET instead of a
// rolling restart, on every server version that has them (the key table, Has). Each
// is mutable at run time and changing it touches only the running process: limits
// and eviction (maxmemory*, maxclients, client buffers), timeouts, logging and
// latency monitoring, background housekeeping (hz, lazyfree-*, active defrag),
// encodings used for new values (*-listpack-*), failover and replication tuning.
// Left out on purpose: keys that need a restart (io-threads, databases), keys the
// operator owns, and appendonly, whose change starts an AOF rewrite that the
// operator would rather roll. This is the one overlay on the generated key table,
// keyed by the same names (TestLiveKeysAreInTheTable).
var liveKeys = []string{
	"acllog-max-len",
	"active-defrag-cycle-max",
	"active-defrag-cycle-min",
	"active-defrag-ignore-bytes",
	"active-defrag-max-scan-fields",
	"active-defrag-threshold-lower",
	"active-defrag-threshold-upper",
	"activedefrag",
	"activerehashing",
	"appendfsync",
	"busy-reply-threshold",
	"client-output-buffer-limit",
	"client-query-buffer-limit",
	"cluster-allow-pubsubshard-when-down",
	"cluster-allow-reads-when-down",
	"cluster-manual-failover-timeout",
	"cluster-node-timeout",
	"cluster-replica-no-failover",
	"cluster-replica-validity-factor",
	"cluster-require-full-coverage",
	"cluster-slot-migration-log-max-len",
	"hash-max-listpack-entries",
	"hash-max-listpack-value",
	"hll-sparse-max-bytes",
	"hz",
	"latency-monitor-threshold",
	"latency-tracking",
	"latency-tracking-info-percentiles",
	"lazyfree-lazy-eviction",
	"lazyfree-lazy-expire",
	"lazyfree-lazy-server-del",
	"lazyfree-lazy-user-del",
	"lazyfree-lazy-user-flush",
	"list-compress-depth",
	"list-max-listpack-size",
	"loglevel",
	"lua-time-limit",
	"maxclients",
	"maxmemory",
	"maxmemory-clients",
	"maxmemory-eviction-tenacity",
	"maxmemory-policy",
	"maxmemory-samples",
	"min-replicas-max-lag",
	"min-replicas-to-write",
	"notify-keyspace-events",
	"proto-max-bulk-len",
	"repl-backlog-size",
	"repl-backlog-ttl",
	"repl-diskless-sync",
	"repl-diskless-sync-delay",
	"repl-diskless-sync-max-replicas",
	"repl-timeout",
	"replica-lazy-flush",
	"replica-priority",
	"save",
	"set-max-intset-entries",
	"set-max-listpack-entries",
	"set-max-listpack-value",
	"shutdown-on-sigterm",
	"shutdown-timeout",
	"slowlog-log-slower-than",
	"slowlog-max-len",
	"stream-node-max-bytes",
	"stream-node-max-entries",
	"tcp-keepalive",
	"timeout",
	"zset-max-listpack-entries",
	"zset-max-listpack-value",
}

// LiveKeys returns the keys that Live accepts for version v, sorted. A zero Version
// counts as Oldest.
func LiveKeys(v Version) []string {
	v = orOldest(v)
	var out []string
	for _, k := range liveKeys {
		if Live(k, v) {
			out = append(out, k)
		}
	}
	return out
}

// Live reports whether key (any spelling) may be changed on a running server of version
// v with CONFIG SET, without a restart. A zero Version counts as Oldest.
func Live(key string, v Version) bool {
	v = orOldest(v)
	k := Normalize(key)
	e, ok := on(k, measuredIndex(v))
	return ok && !e.unlisted && slices.Contains(liveKeys, k) && !Owned(k)
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
	e, ok := on(k, measuredIndex(v))
	return e.def, ok && e.hasDef
}

// ValkeyDefault is the value Valkey itself gives a live key when no config sets it, on
// the oldest measured server that has it (the operator's defaults aside; see
// UnsetValue).
func ValkeyDefault(key string) (string, bool) {
	k := Normalize(key)
	if !slices.Contains(liveKeys, k) {
		return "", false
	}
	for i := range Measured {
		if e, ok := on(k, i); ok && e.hasDef {
			return e.def, true
		}
	}
	return "", false
}
