package validation

import (
	"testing"
	"time"
)

// ScheduleGap finds the shortest time between two backups of every form of schedule.
func TestScheduleGap(t *testing.T) {
	cases := []struct {
		schedule string
		gap      time.Duration
		never    bool
	}{
		{schedule: "@every 1s", gap: time.Second},
		{schedule: "@every 90s", gap: 90 * time.Second},
		{schedule: "@every 6h", gap: 6 * time.Hour},
		{schedule: "@hourly", gap: time.Hour},
		{schedule: "@daily", gap: 24 * time.Hour},
		{schedule: "@weekly", gap: 7 * 24 * time.Hour},
		{schedule: "* * * * *", gap: time.Minute},
		{schedule: "*/5 * * * *", gap: 5 * time.Minute},
		{schedule: "0,4 * * * *", gap: 4 * time.Minute},
		{schedule: "0 3 * * *", gap: 24 * time.Hour},
		{schedule: "0 3,4 * * *", gap: time.Hour},
		// Only on the 1st of the month, but every minute that day.
		{schedule: "* * 1 * *", gap: time.Minute},
		// Across midnight: 23:58 then 00:01 of the next day that fires.
		{schedule: "1,58 0,23 * * *", gap: 3 * time.Minute},
		// The 1st alone fires at 00:00 and 23:59; the 15th and 16th are consecutive days,
		// so 23:59 to 00:00 is the shortest gap, though not on the first day found.
		{schedule: "0,59 0,23 1,15,16 * *", gap: time.Minute},
		// Only consecutive across years: 31 December and 1 January.
		{schedule: "0,59 0,23 1,31 1,12 *", gap: time.Minute},
		// 29 February, once every four years.
		{schedule: "59 23 29 2 *", gap: 1461 * 24 * time.Hour},
		// 29 February 23:59, then 1 March 00:00.
		{schedule: "0,59 0,23 1,29 2,3 *", gap: time.Minute},
		{schedule: "CRON_TZ=Europe/Paris */10 * * * *", gap: 10 * time.Minute},
		{schedule: "0 0 30 2 *", never: true},
	}
	for _, tc := range cases {
		t.Run(tc.schedule, func(t *testing.T) {
			sched, err := ParseSchedule(tc.schedule)
			if err != nil {
				t.Fatal(err)
			}
			gap, ok := ScheduleGap(sched)
			if ok == tc.never {
				t.Fatalf("fires twice: %v, want %v", ok, !tc.never)
			}
			if !tc.never && gap != tc.gap {
				t.Fatalf("gap %s, want %s", gap, tc.gap)
			}
		})
	}
}

// A schedule firing more often than the operator's minimum is refused, naming the
// field, the gap found and the limit.
func TestValidateScheduleInterval(t *testing.T) {
	cases := []struct {
		schedule string
		policy   Policy
		want     string
	}{
		{schedule: "0 3 * * *"},
		{schedule: "@every 5m"},
		{schedule: "*/5 * * * *"},
		{schedule: "@every 1s", want: `spec.schedule: Invalid value: "@every 1s": two backups come 1s apart, ` +
			`more often than this operator allows (one every 5m at most; policy.minBackupInterval)`},
		{schedule: "@every 4m59s", want: "two backups come 4m59s apart"},
		{schedule: "* * * * *", want: "two backups come 1m apart"},
		{schedule: "0,1 3 * * *", want: "two backups come 1m apart"},
		{schedule: "* * 1 * *", want: "two backups come 1m apart"},
		{schedule: "@every 1m", policy: Policy{MinBackupInterval: time.Minute}},
		{schedule: "@hourly", policy: Policy{MinBackupInterval: 2 * time.Hour},
			want: "two backups come 1h apart, more often than this operator allows (one every 2h at most; policy.minBackupInterval)"},
		{schedule: "0 0 30 2 *"}, // never fires: nothing to space out
	}
	for _, tc := range cases {
		t.Run(tc.schedule, func(t *testing.T) {
			withPolicy(t, tc.policy)
			s := validSchedule()
			s.Spec.Schedule = tc.schedule
			var want []string
			if tc.want != "" {
				want = []string{tc.want}
			}
			checkErrs(t, ValidateBackupSchedule(s), want)
		})
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		5 * time.Minute: "5m", time.Hour: "1h", 90 * time.Minute: "1h30m", 90 * time.Second: "1m30s", time.Second: "1s",
	} {
		if got := ShortDuration(d); got != want {
			t.Errorf("ShortDuration(%s) = %q, want %q", d, got, want)
		}
	}
}
