package perf

import (
	"strings"
	"testing"
)

func TestParseMetrics(t *testing.T) {
	text := `# HELP process_cpu_seconds_total Total user and system CPU time.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 1.25
apiserver_request_total{code="201",component="apiserver",group="",resource="pods",subresource="",verb="POST",version="v1"} 7
apiserver_request_total{code="200",group="valkey.io",resource="valkeyclusters",subresource="status",verb="PATCH"} 3 1700000000
odd{msg="a \"quoted\", comma\\n"} 2
broken{a="b" 1
nolabels_no_value
`
	series, err := ParseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 4 {
		t.Fatalf("want 4 series, got %d: %+v", len(series), series)
	}
	if s := series[0]; s.Name != "process_cpu_seconds_total" || s.Value != 1.25 || len(s.Labels) != 0 {
		t.Errorf("first series: %+v", s)
	}
	if s := series[3]; s.Labels["msg"] != `a "quoted", comma\n` {
		t.Errorf("escaped label: %q", s.Labels["msg"])
	}
	if got := Sum(series, "apiserver_request_total", nil); got != 10 {
		t.Errorf("sum of all requests = %v, want 10", got)
	}
	if got := Sum(series, "apiserver_request_total", map[string]string{"resource": "valkeyclusters", "subresource": "status"}); got != 3 {
		t.Errorf("sum of status patches = %v, want 3", got)
	}
	if got := Sum(series, "apiserver_request_total", map[string]string{"resource": "nodes"}); got != 0 {
		t.Errorf("sum of nothing = %v", got)
	}
}
