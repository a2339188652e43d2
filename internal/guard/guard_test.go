package guard

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// stored is a cluster as the API server holds it, with the given config.
func stored(config map[string]string) *v1alpha1.ValkeyCluster {
	return &v1alpha1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default", Generation: 3},
		Spec: v1alpha1.ValkeyClusterSpec{Shards: 3, ReplicasPerShard: ptr.To[int32](1),
			Image: v1alpha1.DefaultImage, WorkloadType: v1alpha1.WorkloadStatefulSet, Config: config},
	}
}

// TestCheckReportsConfigTableAsWarnings: a stored cluster whose config holds an entry
// the key table refuses (admitted by an older operator) stays valid for the
// controllers, which report the entry as a warning; every other rule still stops them.
func TestCheckReportsConfigTableAsWarnings(t *testing.T) {
	for _, tc := range []struct {
		name     string
		config   map[string]string
		valid    bool
		warnings []string
		invalid  string
	}{
		{name: "no config", valid: true},
		{name: "an unknown key", config: map[string]string{"lua-replicate-commands": "yes"}, valid: true,
			warnings: []string{"spec.config[lua-replicate-commands]: Invalid value", "policy.allowedConfigKeys",
				"a server may refuse the entry at the next restart of a member: remove or correct it"}},
		{name: "a value of the wrong type", config: map[string]string{"maxmemory": "lots"}, valid: true,
			warnings: []string{`spec.config[maxmemory]: Invalid value: "lots": must be a memory size`}},
		{name: "a key the image's version lacks", config: map[string]string{"cluster-databases": "4"}, valid: true,
			warnings: []string{"spec.config[cluster-databases]", "the image valkey/valkey:8.0.1 runs 8.0"}},
		{name: "an owned key stops the controllers", config: map[string]string{"port": "7000", "lua-replicate-commands": "yes"},
			warnings: []string{"spec.config[lua-replicate-commands]"}, invalid: "spec.config[port]: Forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(stored(tc.config))
			if r.Valid() != tc.valid {
				t.Fatalf("Valid() = %v, errors %v; want %v", r.Valid(), r.Errs, tc.valid)
			}
			wantStatus := metav1.ConditionFalse
			if !tc.valid {
				wantStatus = metav1.ConditionTrue
			}
			if r.Condition.Type != v1alpha1.ConditionInvalidSpec || r.Condition.Status != wantStatus ||
				!strings.Contains(r.Condition.Message, tc.invalid) || r.Condition.ObservedGeneration != 3 {
				t.Errorf("condition = %+v; want InvalidSpec=%s naming %q", r.Condition, wantStatus, tc.invalid)
			}
			if strings.Contains(r.Condition.Message, "spec.config[lua-replicate-commands]") {
				t.Errorf("InvalidSpec names a key-table finding: %q", r.Condition.Message)
			}
			got := strings.Join(r.ConfigWarnings, "\n")
			if len(tc.warnings) == 0 && got != "" {
				t.Errorf("want no warning, got %q", got)
			}
			for _, w := range tc.warnings {
				if !strings.Contains(got, w) {
					t.Errorf("want a warning containing %q, got %q", w, got)
				}
			}
		})
	}
}

// TestCheckUpdateLeavesConfigTableToCheck: the key table's findings never hold a
// cluster as a changed immutable field would; Check's warnings report them.
func TestCheckUpdateLeavesConfigTableToCheck(t *testing.T) {
	prev := stored(nil)
	c := stored(map[string]string{"lua-replicate-commands": "yes"})
	if errs := CheckUpdate(prev, c); len(errs) != 0 {
		t.Errorf("CheckUpdate = %v; want nothing", errs)
	}
	c.Spec.WorkloadType = v1alpha1.WorkloadPod
	if errs := CheckUpdate(prev, c); len(errs) != 1 || !strings.Contains(errs[0].Error(), "spec.workloadType") {
		t.Errorf("CheckUpdate = %v; want the workload type only", errs)
	}
}
