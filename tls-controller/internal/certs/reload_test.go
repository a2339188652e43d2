package certs

import (
	"testing"
	"time"
)

func TestNextRetryAndComplete(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name     string
		results  map[string]memberResult
		after    time.Duration
		complete bool
	}{
		{name: "no member", results: map[string]memberResult{}},
		{name: "all served", results: map[string]memberResult{"a": {Served: true}, "b": {Served: true}}, complete: true},
		{name: "one pending", results: map[string]memberResult{"a": {Served: true}, "b": {Message: "x"}}, after: 5 * time.Second},
		{name: "waiting for a time", results: map[string]memberResult{"a": {RetryAt: now.Add(time.Minute)}}, after: time.Minute},
		{name: "a time and a pending member", results: map[string]memberResult{"a": {RetryAt: now.Add(time.Minute)}, "b": {}}, after: 5 * time.Second},
		{name: "a time already passed", results: map[string]memberResult{"a": {RetryAt: now.Add(-time.Minute)}}, after: time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextRetry(tc.results, now, 5*time.Second); got != tc.after {
				t.Errorf("nextRetry %s, want %s", got, tc.after)
			}
			if got := complete(tc.results); got != tc.complete {
				t.Errorf("complete %v, want %v", got, tc.complete)
			}
		})
	}
}
