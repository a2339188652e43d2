package framework

import (
	"testing"

	"github.com/valkey-operator/valkey-operator/e2e/checker"
)

func TestClientMatrixMarkdown(t *testing.T) {
	var m ClientMatrix
	m.Add("roll", []ClientReport{
		{Client: "go-redis 9.23.0", Writes: 4000, Acked: 4000, LongestGapMs: 120},
		{Client: "redis-py 4.3.4", Writes: 900, Acked: 888, Failed: 12, LongestGapMs: 2023,
			Errors: map[string]int{"a | b": 12}},
		{Client: "ioredis", Exit: "signal: killed"},
	})
	m.Add("scale out", []ClientReport{CheckerReport(checker.Report{Writes: 10, Acked: 9, Errors: 1, Lost: 0})})
	want := "| operation | client | writes | failed | lost | longest gap | errors |\n|---|---|---|---|---|---|---|\n" +
		"| roll | go-redis 9.23.0 | 4000 | 0 | 0 | 0.12 s |  |\n" +
		"| roll | redis-py 4.3.4 | 900 | 12 | 0 | 2.02 s | 12× a \\| b |\n" +
		"| roll | ioredis | — | — | — | — | ended without a report |\n" +
		"| scale out | write-checker (rueidis) | 10 | 1 | 0 | 0.00 s |  |\n"
	if got := m.Markdown(); got != want {
		t.Errorf("Markdown:\n%s\nwant:\n%s", got, want)
	}
}
