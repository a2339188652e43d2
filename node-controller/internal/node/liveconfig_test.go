package node

import (
	"maps"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/valkey"
)

func TestDiffConfig(t *testing.T) {
	v80 := valkey.Version{Major: 8}
	cases := []struct {
		name             string
		applied, desired map[string]string
		v                valkey.Version
		set, removed     map[string]string
		restart          []string
	}{
		{name: "equal", applied: map[string]string{"maxmemory": "1gb"}, desired: map[string]string{"maxmemory": "1gb"}, v: v80, set: map[string]string{}, removed: map[string]string{}},
		{
			name:    "live change and addition",
			applied: map[string]string{"maxmemory": "1gb"}, desired: map[string]string{"maxmemory": "2gb", "maxmemory-policy": "allkeys-lru"}, v: v80,
			set: map[string]string{"maxmemory": "2gb", "maxmemory-policy": "allkeys-lru"},
		},
		{
			name:    "non-live change, addition and removal",
			applied: map[string]string{"appendonly": "no", "io-threads": "2"}, desired: map[string]string{"appendonly": "yes", "databases": "1"}, v: v80,
			set: map[string]string{}, restart: []string{"appendonly", "databases", "io-threads"},
		},
		{
			name:    "live removal",
			applied: map[string]string{"maxmemory": "1gb", "appendonly": "no"}, desired: map[string]string{"appendonly": "no"}, v: v80,
			set: map[string]string{}, removed: map[string]string{"maxmemory": "0"},
		},
		{
			name:    "a live key with an operator default goes back to the operator's value",
			applied: map[string]string{"cluster-node-timeout": "8000"}, desired: map[string]string{}, v: v80,
			set: map[string]string{}, removed: map[string]string{"cluster-node-timeout": "5000"},
		},
		{
			name:    "the operator's default of a version: shutdown-on-sigterm on 9.1",
			applied: map[string]string{"shutdown-on-sigterm": "force"}, desired: map[string]string{}, v: valkey.Version{Major: 9, Minor: 1},
			set: map[string]string{}, removed: map[string]string{"shutdown-on-sigterm": "failover"},
		},
		{
			name:    "and Valkey's own on 8.0",
			applied: map[string]string{"shutdown-on-sigterm": "force"}, desired: map[string]string{}, v: v80,
			set: map[string]string{}, removed: map[string]string{"shutdown-on-sigterm": "default"},
		},
		{
			name:    "a key live only on newer servers waits for a restart",
			applied: map[string]string{}, desired: map[string]string{"cluster-manual-failover-timeout": "6000"}, v: v80,
			set: map[string]string{}, restart: []string{"cluster-manual-failover-timeout"},
		},
		{
			name:    "the same key is live on 8.1",
			applied: map[string]string{}, desired: map[string]string{"cluster-manual-failover-timeout": "6000"}, v: valkey.Version{Major: 8, Minor: 1},
			set: map[string]string{"cluster-manual-failover-timeout": "6000"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := diffConfig(tc.applied, tc.desired, tc.v)
			if !maps.Equal(d.Set, tc.set) || !maps.Equal(d.Removed, tc.removed) || !slices.Equal(d.Restart, tc.restart) {
				t.Errorf("diff = %+v, want set %v removed %v restart %v", d, tc.set, tc.removed, tc.restart)
			}
		})
	}
}

func TestApplyLiveKeepsNonLiveKeys(t *testing.T) {
	applied := map[string]string{"maxmemory": "1gb", "appendonly": "no", "timeout": "10"}
	desired := map[string]string{"maxmemory": "2gb", "appendonly": "yes"}
	got := diffConfig(applied, desired, valkey.Version{}).applyLive(applied)
	want := map[string]string{"maxmemory": "2gb", "appendonly": "no"}
	if !maps.Equal(got, want) {
		t.Errorf("applyLive = %v, want %v (the non-live change waits)", got, want)
	}
	if applied["maxmemory"] != "1gb" {
		t.Error("applyLive changed its input")
	}
}

func TestNextConfig(t *testing.T) {
	applied := map[string]string{"maxmemory": "1gb", "maxmemory-policy": "noeviction", "appendonly": "no"}
	desired := map[string]string{"maxmemory": "2gb", "maxmemory-policy": "bogus", "appendonly": "yes", "timeout": "5"}
	if got := nextConfig(desired, applied, false, valkey.Version{}); !maps.Equal(got, desired) {
		t.Errorf("without a refusal the next pod takes the spec: %v", got)
	}
	got := nextConfig(desired, applied, true, valkey.Version{})
	want := map[string]string{"maxmemory": "1gb", "maxmemory-policy": "noeviction", "appendonly": "yes"}
	if !maps.Equal(got, want) {
		t.Errorf("after a refusal = %v, want %v (live keys keep their accepted values; unaccepted ones wait)", got, want)
	}
}

// TestLiveVersion: the running server's own version decides which keys are set live,
// then the version it reported before, never the image tag.
func TestLiveVersion(t *testing.T) {
	vn := testNode(func(vn *v1alpha1.ValkeyNode) { vn.Spec.Image = "valkey/valkey:9.0.0" })
	if got := liveVersion(vn, valkey.Version{}); got != (valkey.Version{Major: 8}) {
		t.Errorf("a server that never ran: %v, want the oldest supported (the tag says nothing)", got)
	}
	vn.Status.Version = "9.1.2"
	if got := liveVersion(vn, valkey.Version{}); got != (valkey.Version{Major: 9, Minor: 1, Patch: 2}) {
		t.Errorf("not reached this pass: %v, want the version it reported, 9.1.2", got)
	}
	if got := liveVersion(vn, valkey.Version{Major: 8, Minor: 1, Patch: 1}); got != (valkey.Version{Major: 8, Minor: 1, Patch: 1}) {
		t.Errorf("reached: %v, want its INFO's 8.1.1", got)
	}
}

func TestRefusedBefore(t *testing.T) {
	vn := testNode()
	vn.Generation = 3
	set := func(reason string, gen int64) {
		vn.Status.Conditions = []metav1.Condition{conditions.New(v1alpha1.ConditionConfigApplied, false, reason, "x", gen)}
	}
	set(v1alpha1.ReasonConfigRefused, 3)
	if !refusedBefore(vn) {
		t.Error("a refusal of this generation is not remembered")
	}
	set(v1alpha1.ReasonConfigRefused, 2)
	if refusedBefore(vn) {
		t.Error("a refusal of an older spec blocks a new attempt")
	}
	set(v1alpha1.ReasonServerUnreachable, 3)
	if refusedBefore(vn) {
		t.Error("an unreachable server counts as a refusal")
	}
}

func TestLiveNote(t *testing.T) {
	got := liveNote(configDiff{Set: map[string]string{"maxmemory": "secret-looking-value"}, Removed: map[string]string{"timeout": "0"}})
	want := "set maxmemory with CONFIG SET; reset timeout to the values a restart would give them, as the spec no longer sets them"
	if got != want {
		t.Errorf("note = %q, want %q (key names only)", got, want)
	}
}
