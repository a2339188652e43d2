package valkeyconf

import (
	"strconv"
	"strings"
	"time"
)

// The keys the operator derives timings from.
const (
	// KeyNodeTimeout is how long a node may be unreachable before Valkey flags it failing.
	KeyNodeTimeout = "cluster-node-timeout"
	// KeyManualFailoverTimeout bounds a manual (planned) failover.
	KeyManualFailoverTimeout = "cluster-manual-failover-timeout"
)

// Valkey's own defaults of those keys.
const (
	valkeyNodeTimeoutMillis           = 15000
	valkeyManualFailoverTimeoutMillis = 5000
)

// The grace period of a member's pod.
const (
	// KubernetesDefaultGracePeriodSeconds is the pod default, and the least the operator
	// derives.
	KubernetesDefaultGracePeriodSeconds = 30
	// GracePeriodHeadroomSeconds is added to the manual failover timeout: a primary
	// being stopped hands over its slots within that timeout, then exits.
	GracePeriodHeadroomSeconds = 10
)

// millis reads a positive whole number of milliseconds.
func millis(v string) (int64, bool) {
	ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return ms, err == nil && ms > 0
}

// timing is the value of key in config (any spelling) when it is a positive number of
// milliseconds, else the operator's default, else Valkey's.
func timing(config map[string]string, key string, valkeyDefault int64) time.Duration {
	if v, ok := Lookup(config, key); ok {
		if ms, ok := millis(v); ok {
			return time.Duration(ms) * time.Millisecond
		}
	}
	if v, ok := defaultValue(key); ok {
		if ms, ok := millis(v); ok {
			return time.Duration(ms) * time.Millisecond
		}
	}
	return time.Duration(valkeyDefault) * time.Millisecond
}

// NodeTimeout is the cluster-node-timeout a server runs with for this config.
func NodeTimeout(config map[string]string) time.Duration {
	return timing(config, KeyNodeTimeout, valkeyNodeTimeoutMillis)
}

// ManualFailoverTimeout is the cluster-manual-failover-timeout a server runs with.
func ManualFailoverTimeout(config map[string]string) time.Duration {
	return timing(config, KeyManualFailoverTimeout, valkeyManualFailoverTimeoutMillis)
}

// MinimumGracePeriodSeconds is the shortest grace period that lets a primary finish a
// manual failover before it is killed: the failover timeout in whole seconds, rounded
// up, plus GracePeriodHeadroomSeconds.
func MinimumGracePeriodSeconds(config map[string]string) int64 {
	ms := ManualFailoverTimeout(config).Milliseconds()
	return (ms+999)/1000 + GracePeriodHeadroomSeconds
}

// GracePeriodSeconds is the grace period a member's pod gets: explicit when set, else
// the larger of the Kubernetes default and MinimumGracePeriodSeconds.
func GracePeriodSeconds(explicit *int64, config map[string]string) int64 {
	if explicit != nil {
		return *explicit
	}
	return max(KubernetesDefaultGracePeriodSeconds, MinimumGracePeriodSeconds(config))
}

// Bound is the range the operator accepts for a numeric key it derives timings from.
type Bound struct {
	Key      string
	Min, Max int64
	// Why the range holds the operator's margins.
	Why string
}

// bounds keep the timings the operator derives within their safety margins: a node
// timeout above a minute would let a crashed primary restart empty before its replica is
// promoted (the restart wait grows with it); one below a second flags busy nodes as
// failed. A manual failover timeout above a minute makes the derived grace period (the
// timeout plus 10 s) longer than a drain is expected to wait.
var bounds = []Bound{
	{KeyNodeTimeout, 1000, 60000, "a crashed server waits about twice this long before it starts empty; shorter than a second flags busy nodes as failed"},
	{KeyManualFailoverTimeout, 1000, 60000, "the derived grace period of a primary is this timeout plus 10 s"},
}

// Bounds returns the bounded keys.
func Bounds() []Bound { return append([]Bound(nil), bounds...) }

// CheckBound checks the value of key (any spelling) against its bound, if it has one:
// ok is false when the value is not a whole number of milliseconds in range.
func CheckBound(key, value string) (b Bound, bounded, ok bool) {
	k := Normalize(key)
	for _, b := range bounds {
		if b.Key != k {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		return b, true, err == nil && v >= b.Min && v <= b.Max
	}
	return Bound{}, false, true
}
