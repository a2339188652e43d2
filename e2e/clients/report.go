// Package clients holds what the client matrix's writers (the folders below) and the e2e
// framework that runs them share: the report every writer prints last (README.md).
package clients

import (
	"fmt"
	"sort"
	"strings"
)

// Report is what one writer saw in one run: the JSON of its "report" line.
type Report struct {
	// Event is "report" on the writer's line.
	Event          string         `json:"event,omitempty"`
	Client         string         `json:"client"`
	Writes         int            `json:"writes"`
	Acked          int            `json:"acked"`
	Failed         int            `json:"failed"`
	Lost           int            `json:"lost"`
	LostKeys       []string       `json:"lostKeys"`
	Unread         int            `json:"unread"`
	LongestGapMs   int64          `json:"longestGapMs"`
	LongestGapAtMs int64          `json:"longestGapAtMs"`
	Errors         map[string]int `json:"errors"`
	// Exit is set when the program ended without a report: how it ended and the end of
	// what it printed on stderr.
	Exit string `json:"exit,omitempty"`
}

// Uncaught counts the errors the library raised past every handler the writer attached
// (the writers record them under "uncaught: " rather than dying of them).
func (r Report) Uncaught() int {
	n := 0
	for k, v := range r.Errors {
		if strings.HasPrefix(k, "uncaught: ") {
			n += v
		}
	}
	return n
}

// TopErrors lists the n most frequent errors, "count× message".
func (r Report) TopErrors(n int) []string {
	type e struct {
		msg string
		n   int
	}
	var es []e
	for k, v := range r.Errors {
		es = append(es, e{k, v})
	}
	sort.Slice(es, func(i, j int) bool { return es[i].n > es[j].n || es[i].n == es[j].n && es[i].msg < es[j].msg })
	var out []string
	for i := 0; i < len(es) && i < n; i++ {
		out = append(out, fmt.Sprintf("%d× %s", es[i].n, es[i].msg))
	}
	return out
}

func (r Report) String() string {
	if r.Exit != "" {
		return fmt.Sprintf("%s: ended without a report: %s", r.Client, r.Exit)
	}
	at := ""
	if r.LongestGapAtMs > 0 {
		at = fmt.Sprintf(" at %.1f s", float64(r.LongestGapAtMs)/1000)
	}
	return fmt.Sprintf("%s: %d writes, %d acknowledged, %d failed, %d lost, %d unread, longest gap %d ms%s; errors %v",
		r.Client, r.Writes, r.Acked, r.Failed, r.Lost, r.Unread, r.LongestGapMs, at, r.TopErrors(3))
}
