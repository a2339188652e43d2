package cluster

import (
	"testing"

	"github.com/valkey-operator/valkey-operator/valkey"
)

func TestLastFailed(t *testing.T) {
	ranges := []valkey.SlotRange{{Start: 3277, End: 5461}}
	job := func(target, state, created string, slots ...valkey.SlotRange) valkey.SlotMigration {
		return valkey.SlotMigration{TargetNode: target, State: state, Slots: slots, Message: state,
			Fields: map[string]string{"create_time": created}}
	}
	for _, tc := range []struct {
		name string
		jobs []valkey.SlotMigration
		want string // the message of the job returned, "" for nil
	}{
		{"none", nil, ""},
		{"failed", []valkey.SlotMigration{job("b", "failed", "100", ranges...)}, "failed"},
		{"a later try succeeded", []valkey.SlotMigration{
			job("b", "failed", "100", ranges...), job("b", "success", "101", ranges...)}, ""},
		{"a later try failed", []valkey.SlotMigration{
			job("b", "success", "99", ranges...), job("b", "failed", "101", ranges...)}, "failed"},
		{"other target", []valkey.SlotMigration{job("c", "failed", "100", ranges...)}, ""},
		{"other slots", []valkey.SlotMigration{job("b", "failed", "100", valkey.SlotRange{Start: 0, End: 10})}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := lastFailed(tc.jobs, ranges, "b")
			if (got == nil) != (tc.want == "") || got != nil && got.Message != tc.want {
				t.Errorf("lastFailed = %+v, want a job with message %q", got, tc.want)
			}
		})
	}
}
