package valkeyconf

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a Valkey server version.
type Version struct {
	Major, Minor, Patch int
}

// maxVersionPart bounds each version number so that comparisons cannot overflow.
const maxVersionPart = 1 << 20

// ParseVersion parses "major.minor[.patch]" with an optional suffix after '-', '+' or a
// space ("9.0.0-rc1").
func ParseVersion(s string) (Version, error) {
	core := strings.TrimSpace(s)
	if i := strings.IndexAny(core, "-+ "); i >= 0 {
		core = core[:i]
	}
	parts := strings.Split(core, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, fmt.Errorf("bad version %q", truncate(s, 40))
	}
	var nums [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > maxVersionPart || p == "" || p[0] == '+' {
			return Version{}, fmt.Errorf("bad version %q", truncate(s, 40))
		}
		nums[i] = n
	}
	return Version{Major: nums[0], Minor: nums[1], Patch: nums[2]}, nil
}

// AtLeast reports whether v is major.minor or later.
func (v Version) AtLeast(major, minor int) bool {
	if v.Major != major {
		return v.Major > major
	}
	return v.Minor >= minor
}

// String returns "major.minor.patch".
func (v Version) String() string {
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// IsZero reports whether v is unknown.
func (v Version) IsZero() bool { return v == Version{} }

// Oldest is the oldest version the operator supports; an unknown version counts as it.
var Oldest = Version{Major: 8}

// orOldest maps the zero Version to Oldest.
func orOldest(v Version) Version {
	if v.IsZero() {
		return Oldest
	}
	return v
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// MemberVersion is the version a member's live keys are decided by, in the cluster- and
// the node-controller alike: the one its server answered this pass (INFO), else the one
// it reported before (the ValkeyNode's status.version), else Oldest. Never the image's
// tag: what a pod runs is known only once it runs.
func MemberVersion(observed Version, reported string) Version {
	if !observed.IsZero() {
		return observed
	}
	if v, err := ParseVersion(reported); err == nil {
		return v
	}
	return Oldest
}
