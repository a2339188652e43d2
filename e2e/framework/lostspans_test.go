package framework

import (
	"slices"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/e2e/checker"
)

func TestLostSpans(t *testing.T) {
	at := func(s string) time.Time {
		tm, err := time.Parse("15:04:05.000", s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	got := lostSpans([]checker.LostWrite{
		{Key: "k3", Slot: 10923, AckedAt: at("00:28:01.020")},
		{Key: "k1", Slot: 10923, AckedAt: at("00:28:00.113")},
		{Key: "k9", Slot: 0, AckedAt: at("00:30:00.000")},
		{Key: "k2", Slot: 10923, AckedAt: at("00:28:00.500")},
	})
	want := []string{
		"slot 0: 1 acknowledged from 00:30:00.000 to 00:30:00.000",
		"slot 10923: 3 acknowledged from 00:28:00.113 to 00:28:01.020",
	}
	if !slices.Equal(got, want) {
		t.Errorf("lostSpans = %q, want %q", got, want)
	}
}
