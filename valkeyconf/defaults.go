package valkeyconf

// Default is a key the operator renders unless the user's config sets it.
type Default struct {
	Key, Value string
	// Since is the first version that accepts the value.
	Since Version
}

// defaults are rendered after the owned keys and may be overridden by the user's config
// (a later directive wins in valkey.conf):
//
//   - cluster-node-timeout 5000: detect a dead primary in about 6 s instead of 16 s
//     (Valkey's default is 15000), still tolerant of short pauses.
//   - repl-diskless-sync-delay 0: the operator adds replicas one at a time, so waiting 5 s
//     to batch full syncs only delays each new replica.
//   - shutdown-on-sigterm failover (9.0+ only; 8.x refuses the value): a primary that
//     gets SIGTERM hands its slots to a replica before it exits.
var defaults = []Default{
	{KeyNodeTimeout, "5000", Version{}},
	{"repl-diskless-sync-delay", "0", Version{}},
	{"shutdown-on-sigterm", "failover", Version{Major: 9}},
}

// Defaults returns the operator's defaults a server of version v accepts, in rendering
// order. A zero Version counts as Oldest.
func Defaults(v Version) []Default {
	v = orOldest(v)
	var out []Default
	for _, d := range defaults {
		if v.AtLeast(d.Since.Major, d.Since.Minor) {
			out = append(out, d)
		}
	}
	return out
}

// defaultValue is the operator's default for key, if it has one for every version.
func defaultValue(key string) (string, bool) {
	for _, d := range defaults {
		if d.Key == key && d.Since.IsZero() {
			return d.Value, true
		}
	}
	return "", false
}

// VersionedDefaults returns the defaults that only some supported versions take and that
// user (the user's config, any spelling) does not set: the server writes those its
// version takes when it starts.
func VersionedDefaults(user map[string]string) []Default {
	set := Normalized(user)
	var out []Default
	for _, d := range defaults {
		if _, ok := set[d.Key]; !ok && !d.Since.IsZero() {
			out = append(out, d)
		}
	}
	return out
}
