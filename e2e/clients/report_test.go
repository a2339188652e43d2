package clients

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestReportReadsAWritersLine(t *testing.T) {
	line := `{"event":"report","client":"ioredis 6.1.0","writes":2165,"acked":2162,"failed":3,"lost":0,"lostKeys":[],"unread":0,` +
		`"longestGapMs":1906,"longestGapAtMs":6190,"errors":{"event: node: connect ECONNREFUSED N.N.N.N:N":32,` +
		`"Too many Cluster redirections. Last error: ReplyError: MOVED N N.N.N.N:N":2,"uncaught: Connection is closed.":1}}`
	var r Report
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatal(err)
	}
	if r.Client != "ioredis 6.1.0" || r.Writes != 2165 || r.Failed != 3 || r.LongestGapMs != 1906 {
		t.Errorf("read %+v", r)
	}
	if got := r.Uncaught(); got != 1 {
		t.Errorf("Uncaught() = %d, want 1", got)
	}
	top := r.TopErrors(2)
	if len(top) != 2 || !strings.HasPrefix(top[0], "32× event: node: connect ECONNREFUSED") || !strings.HasPrefix(top[1], "2× Too many") {
		t.Errorf("TopErrors(2) = %q", top)
	}
	if s := r.String(); !strings.Contains(s, "2162 acknowledged, 3 failed, 0 lost") || !strings.Contains(s, "longest gap 1906 ms at 6.2 s") {
		t.Errorf("String() = %q", s)
	}
	if s := (Report{Client: "redis-py", Exit: "exit status 1"}).String(); s != "redis-py: ended without a report: exit status 1" {
		t.Errorf("String() of an exit = %q", s)
	}
}
