package valkeyconf

import (
	"sort"
	"strings"
)

// newer reports whether a is a later major.minor than b.
func newer(a, b Version) bool {
	return a.AtLeast(b.Major, b.Minor) && a != b && !(a.Major == b.Major && a.Minor == b.Minor)
}

// Required returns the oldest version that takes every key of config, and the keys
// that need it (sorted); the zero Version when every supported version takes them all.
func Required(config map[string]string) (Version, []string) {
	var req Version
	var keys []string
	for k, val := range config {
		s := Since(k, val)
		switch {
		case s.IsZero():
		case newer(s, req):
			req, keys = s, []string{Normalize(k)}
		case s.Major == req.Major && s.Minor == req.Minor:
			keys = append(keys, Normalize(k))
		}
	}
	sort.Strings(keys)
	return req, keys
}

// ImageVersion reads what an image reference's tag says of the Valkey version it runs
// ("valkey/valkey:8.0.1", ":8.1-alpine", ":v9"), and how much of it: known is 0 when the
// tag names no version (":latest", a digest, a mirror's own tag), 1 when it names the
// major version only, 2 or 3 when it names major.minor or a full version. The tag is a
// claim of whoever published the image, so the operator uses it only to refuse, at
// admission, a config that version surely does not take; what runs is decided by the
// server's own version (valkey-server --version, then INFO).
func ImageVersion(image string) (v Version, known int) {
	ref, _, _ := strings.Cut(image, "@")
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i+1:], "/") {
		return Version{}, 0
	}
	tag := strings.TrimPrefix(ref[i+1:], "v")
	if j := strings.IndexAny(tag, "-+_"); j >= 0 {
		tag = tag[:j]
	}
	parts := strings.Split(tag, ".")
	if len(parts) > 3 {
		return Version{}, 0
	}
	var nums [3]int
	for i, p := range parts {
		n := 0
		if p == "" || len(p) > 6 {
			return Version{}, 0
		}
		for _, c := range p {
			if c < '0' || c > '9' {
				return Version{}, 0
			}
			n = n*10 + int(c-'0')
		}
		nums[i] = n
	}
	return Version{Major: nums[0], Minor: nums[1], Patch: nums[2]}, len(parts)
}

// SurelyLacks reports whether a server of an image whose tag says v (to the precision
// known, as ImageVersion returns) cannot take a key that needs version need.
func SurelyLacks(v Version, known int, need Version) bool {
	switch {
	case need.IsZero() || known == 0:
		return false
	case known == 1:
		return need.Major > v.Major
	}
	return !v.AtLeast(need.Major, need.Minor)
}
