package perf

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Series is one line of a Prometheus text exposition.
type Series struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// ParseMetrics reads the series of a Prometheus text exposition (comments and lines it
// cannot read are skipped).
func ParseMetrics(r io.Reader) ([]Series, error) {
	var out []Series
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		if s, ok := parseSeries(sc.Text()); ok {
			out = append(out, s)
		}
	}
	return out, sc.Err()
}

// parseSeries reads `name{a="b",...} value [timestamp]`.
func parseSeries(line string) (Series, bool) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' {
		return Series{}, false
	}
	s := Series{Labels: map[string]string{}}
	rest := line
	if i := strings.IndexAny(line, "{ "); i < 0 {
		return Series{}, false
	} else if line[i] == '{' {
		s.Name = line[:i]
		labels, after, ok := parseLabels(line[i+1:])
		if !ok {
			return Series{}, false
		}
		s.Labels, rest = labels, after
	} else {
		s.Name, rest = line[:i], line[i:]
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return Series{}, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return Series{}, false
	}
	s.Value = v
	return s, true
}

// parseLabels reads `a="b",c="d"}` and returns the labels and what follows the brace.
func parseLabels(s string) (map[string]string, string, bool) {
	labels := map[string]string{}
	for {
		s = strings.TrimLeft(s, " ,")
		if strings.HasPrefix(s, "}") {
			return labels, s[1:], true
		}
		eq := strings.Index(s, "=\"")
		if eq <= 0 {
			return nil, "", false
		}
		name := strings.TrimSpace(s[:eq])
		value, n, ok := readQuoted(s[eq+1:])
		if !ok {
			return nil, "", false
		}
		labels[name] = value
		s = s[eq+1+n:]
	}
}

// readQuoted reads a double-quoted label value with \\, \" and \n escapes and returns
// it and the number of bytes read.
func readQuoted(s string) (string, int, bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 >= len(s) {
				return "", 0, false
			}
			i++
			if s[i] == 'n' {
				b.WriteByte('\n')
			} else {
				b.WriteByte(s[i])
			}
		case '"':
			return b.String(), i + 1, true
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}

// httpMetrics fetches and parses a metrics endpoint over plain HTTP.
func httpMetrics(ctx context.Context, url string, timeout time.Duration) ([]Series, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	return ParseMetrics(resp.Body)
}

// Sum adds the values of the series called name whose labels include every pair of match.
func Sum(series []Series, name string, match map[string]string) float64 {
	var total float64
	for _, s := range series {
		if s.Name == name && hasLabels(s, match) {
			total += s.Value
		}
	}
	return total
}

func hasLabels(s Series, match map[string]string) bool {
	for k, v := range match {
		if s.Labels[k] != v {
			return false
		}
	}
	return true
}
