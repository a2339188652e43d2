package acl

import (
	"strings"
	"testing"
)

// ruleCases are rule lists with the verdict of valkey-server 8.0.1 (ok true: accepted).
// The integration suite runs them on a real server ("the local check of rules agrees
// with the server's").
var ruleCases = []struct {
	rules []string
	ok    bool
}{
	{[]string{"on", "nopass", "+@all", "~*", "&*"}, true},
	{[]string{"ON", "Off", "NOPASS", "resetpass", "reset", "skip-sanitize-payload", "sanitize-payload", "clearselectors"}, true},
	{[]string{"allkeys", "resetkeys", "allchannels", "resetchannels", "allcommands", "nocommands"}, true},
	{[]string{"+get", "-set", "+@read", "-@dangerous", "+@Dangerous", "+CONFIG|GET", "-config|set"}, true},
	{[]string{"+bogus"}, false},
	{[]string{"+@nonexist"}, false},
	{[]string{"+config|bogus"}, false},
	{[]string{"+config|"}, false},
	{[]string{"+|get"}, false},
	{[]string{"+config|get|x"}, false},
	{[]string{"+select|0"}, true},
	{[]string{"-select|0"}, false},
	{[]string{"+@read|x"}, false},
	{[]string{"+"}, false},
	{[]string{"-@"}, false},
	{[]string{"~app:*", "%R~shared:*", "%W~w:*", "%RW~x", "%WR~y", "%r~z"}, true},
	{[]string{"%~x"}, false},
	{[]string{"%X~a"}, false},
	{[]string{"%RR~a"}, false},
	{[]string{"~*", "~a"}, false},
	{[]string{"~*", "%R~a"}, false},
	{[]string{"%R~*", "~a"}, true},
	{[]string{"~*", "resetkeys", "~a"}, true},
	{[]string{"&*", "&x"}, false},
	{[]string{"allchannels", "&x"}, false},
	{[]string{"resetchannels", "&x"}, true},
	{[]string{"#" + strings.Repeat("0", 64)}, true},
	{[]string{"#" + strings.Repeat("A", 64)}, false},
	{[]string{"#abc"}, false},
	{[]string{"#" + strings.Repeat("0", 64), "!" + strings.Repeat("0", 64)}, true},
	{[]string{"!" + strings.Repeat("0", 64)}, false},
	{[]string{">pw", "<pw"}, true},
	{[]string{"<pw"}, false},
	{[]string{"(~x", "+get)"}, true},
	{[]string{"(~x +get)"}, false}, // one argument with a space: the file cannot hold it
	{[]string{"(~x"}, false},
	{[]string{"garbage"}, false},
}

func TestCheckLocal(t *testing.T) {
	for _, tc := range ruleCases {
		t.Run(strings.Join(tc.rules, " "), func(t *testing.T) {
			ref := CheckLocal([]User{{Name: "u", Rules: tc.rules}})
			if got := ref["u"] == ""; got != tc.ok {
				t.Fatalf("accepted = %v, want %v (%q)", got, tc.ok, ref["u"])
			}
		})
	}
}

func TestFileSafe(t *testing.T) {
	tests := []struct {
		u    User
		want string
	}{
		{User{Name: "ok", Rules: []string{"on"}}, ""},
		{User{Name: "", Rules: nil}, "the user name is empty"},
		{User{Name: "a b"}, "the user name contains white space or control characters"},
		{User{Name: "u", Rules: []string{"~a\tb"}}, `rule "~a\tb" contains white space or control characters`},
		{User{Name: "u", Rules: []string{">pass word"}}, `rule "<redacted>" contains white space or control characters`},
	}
	for _, tt := range tests {
		if got := fileSafe(tt.u); got != tt.want {
			t.Errorf("fileSafe(%q %q) = %q, want %q", tt.u.Name, tt.u.Rules, got, tt.want)
		}
	}
}

func TestCheckLocalReportsPerUser(t *testing.T) {
	ref := CheckLocal([]User{
		{Name: "good", Rules: []string{"on", "+get"}},
		{Name: "bad", Rules: []string{"on", "+bogus"}},
		{Name: "worse", Rules: []string{"on", "~x y"}},
	})
	if len(ref) != 2 || ref["good"] != "" {
		t.Fatalf("refusals %v", ref)
	}
	if want := "Error in ACL SETUSER modifier '+bogus': Unknown command or category name in ACL"; ref["bad"] != want {
		t.Errorf("bad: %q, want %q", ref["bad"], want)
	}
}
