package jobapi

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A termination message is read as a Result only when it is one the Job's program
// could have written; its message is always cut to a printable line.
func TestParseResult(t *testing.T) {
	for _, c := range []struct {
		name, msg string
		ok        bool
		message   string
	}{
		{name: "a success", msg: `{"size":3,"sha256":"ab"}`, ok: true},
		{name: "a failure", msg: ` {"reason":"AccessDenied","message":"403"}` + "\n", ok: true, message: "403"},
		{name: "longer than Kubernetes keeps", msg: `{"reason":"x","message":"` + strings.Repeat("y", MaxTerminationMessage) + `"}`},
		{name: "not JSON", msg: "panic: runtime error"},
		{name: "a reason that is no word", msg: `{"reason":"Access Denied"}`},
		{name: "a reason too long", msg: `{"reason":"` + strings.Repeat("A", 65) + `"}`},
		{name: "control characters", msg: `{"reason":"X","message":"a\nb\u001b[31mc"}`, ok: true, message: "a b [31mc"},
		{name: "a long message", msg: `{"reason":"X","message":"` + strings.Repeat("é", 300) + `"}`, ok: true,
			message: strings.Repeat("é", MaxMessage-3) + "..."},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := ParseResult(c.msg)
			if (err == nil) != c.ok || (c.ok && r.Message != c.message) {
				t.Errorf("got %+v, %v", r, err)
			}
			if utf8.RuneCountInString(r.Message) > MaxMessage {
				t.Errorf("a message of %d characters", utf8.RuneCountInString(r.Message))
			}
		})
	}
}

func TestRedact(t *testing.T) {
	got := Redact("key AKIDEXAMPLE secret s3cr3t-value, a", "AKIDEXAMPLE", "s3cr3t-value", "", "a")
	if got != "key <redacted> secret <redacted>, a" {
		t.Errorf("got %q", got)
	}
}

// TestCleanMessageRedacts: a Job's message quoting a server's refusal of a password
// line keeps the key and the error only.
func TestCleanMessageRedacts(t *testing.T) {
	got := CleanMessage("sync from 10.0.0.7:6379: >>> 'masterauth s3cret'\nBad directive; AUTH _backup s3cret: WRONGPASS")
	if strings.Contains(got, "s3cret") || !strings.Contains(got, "'masterauth <redacted>'") || !strings.Contains(got, "WRONGPASS") {
		t.Errorf("got %q", got)
	}
}
