package validation

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateSchedule checks a ValkeyBackupSchedule's schedule: its syntax, and that two
// backups are never closer than the operator's policy allows (every backup streams
// each shard's whole dataset to the store).
func validateSchedule(s string, p *field.Path) field.ErrorList {
	if errs := tooLong(p, s, MaxScheduleLength); errs != nil {
		return errs
	}
	sched, err := ParseSchedule(s)
	if err != nil {
		return field.ErrorList{field.Invalid(p, s, err.Error())}
	}
	minimum := CurrentPolicy().BackupInterval()
	if gap, ok := ScheduleGap(sched); ok && gap < minimum {
		return field.ErrorList{field.Invalid(p, s, fmt.Sprintf(
			"two backups come %s apart, more often than this operator allows (one every %s at most; policy.minBackupInterval)",
			ShortDuration(gap), ShortDuration(minimum)))}
	}
	return nil
}

// gapStart is where ScheduleGap starts looking: any fixed instant would do, a fixed one
// makes every component reach the same answer.
var gapStart = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// ScheduleGap returns the shortest time between two consecutive firings of sched, and
// false when it fires less than twice. @every schedules fire at a constant interval.
// A cron schedule fires at the same times of day on every day it fires (its day,
// month and weekday fields only choose the days), so the shortest gap is within one
// such day, or from the last firing of a day to the first of the next day that fires:
// the days are walked over four years, enough for every calendar pattern but the
// weekday of a date. Times are in the schedule's zone (UTC unless CRON_TZ is given);
// a daylight-saving shift may make a real gap an hour shorter or longer than found.
func ScheduleGap(sched cron.Schedule) (time.Duration, bool) {
	switch s := sched.(type) {
	case cron.ConstantDelaySchedule:
		return s.Delay, true
	case *cron.ConstantDelaySchedule:
		return s.Delay, true
	}
	loc := time.UTC
	if s, ok := sched.(*cron.SpecSchedule); ok && s.Location != nil {
		loc = s.Location
	}
	t := sched.Next(time.Date(gapStart.Year(), gapStart.Month(), gapStart.Day(), 0, 0, 0, 0, loc).Add(-time.Second))
	if t.IsZero() {
		return 0, false
	}
	best, found := time.Duration(0), false
	record := func(d time.Duration) {
		if !found || d < best {
			best, found = d, true
		}
	}
	// The firings of the first day that fires.
	for {
		n := sched.Next(t)
		if n.IsZero() || !sameDay(n, t) {
			break
		}
		record(n.Sub(t))
		t = n
	}
	lastOfDay := t.Sub(startOfDay(t))
	// From each day's last firing to the next day's first, until two days in a row fire.
	horizon := t.AddDate(4, 0, 2)
	for {
		n := sched.Next(t)
		switch {
		case n.IsZero() || n.After(horizon):
			return best, found
		case sameDay(n, t):
			t = n // a daylight-saving shift moved the day's last firing
			continue
		}
		record(n.Sub(t))
		if sameDay(n, t.AddDate(0, 0, 1)) {
			return best, found // no gap across days is shorter than between consecutive days
		}
		t = startOfDay(n).Add(lastOfDay)
	}
}

func sameDay(a, b time.Time) bool {
	ay, am, ad := a.Date()
	by, bm, bd := b.Date()
	return ay == by && am == bm && ad == bd
}

func startOfDay(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
}

// ShortDuration writes a duration without its zero units (5m, 1h30m, 90s as 1m30s).
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
