package perf

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSlope(t *testing.T) {
	cases := []struct {
		name   string
		points []Point
		want   float64
		err    string
	}{
		{name: "two points", points: []Point{{10, 300}, {100, 345}}, want: 0.5},
		{name: "middle point ignored", points: []Point{{10, 300}, {50, 900}, {100, 345}}, want: 0.5},
		{name: "order does not matter", points: []Point{{100, 345}, {10, 300}, {50, 320}}, want: 0.5},
		{name: "falling", points: []Point{{10, 2}, {110, 1}}, want: -0.01},
		{name: "flat", points: []Point{{10, 7}, {100, 7}}, want: 0},
		{name: "one point", points: []Point{{10, 300}}, err: "at least 2 points"},
		{name: "none", err: "at least 2 points"},
		{name: "same x", points: []Point{{10, 1}, {10, 2}}, err: "every point is at x=10"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Slope(c.points)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Slope(%v) error %v, want one containing %q", c.points, err, c.err)
				}
				return
			}
			if err != nil || !near(got, c.want) {
				t.Errorf("Slope(%v) = %v, %v; want %v", c.points, got, err, c.want)
			}
		})
	}
}

func TestOperatorSnapshotUsage(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	snap := func(at time.Duration, pods map[string]PodSample) OperatorSnapshot {
		return OperatorSnapshot{At: t0.Add(at), Pods: pods}
	}
	const mib = 1 << 20
	cases := []struct {
		name          string
		before, after OperatorSnapshot
		rss, cpu      map[string]float64
		pods          map[string]int
		err           string
	}{
		{
			name: "one pod per component",
			before: snap(0, map[string]PodSample{
				"a": {Name: "cc", Component: "cluster-controller", CPUSeconds: 10, RSSBytes: 50 * mib},
				"b": {Name: "nc", Component: "node-controller", CPUSeconds: 5, RSSBytes: 40 * mib}}),
			after: snap(30*time.Second, map[string]PodSample{
				"a": {Name: "cc", Component: "cluster-controller", CPUSeconds: 10.5, RSSBytes: 60 * mib},
				"b": {Name: "nc", Component: "node-controller", CPUSeconds: 5, RSSBytes: 41 * mib}}),
			rss:  map[string]float64{"cluster-controller": 60, "node-controller": 41},
			cpu:  map[string]float64{"cluster-controller": 1, "node-controller": 0},
			pods: map[string]int{"cluster-controller": 1, "node-controller": 1},
		},
		{
			name: "a component's pods are summed",
			before: snap(0, map[string]PodSample{
				"a": {Name: "w1", Component: "webhooks", CPUSeconds: 1, RSSBytes: 30 * mib},
				"b": {Name: "w2", Component: "webhooks", CPUSeconds: 2, RSSBytes: 30 * mib}}),
			after: snap(2*time.Minute, map[string]PodSample{
				"a": {Name: "w1", Component: "webhooks", CPUSeconds: 2, RSSBytes: 31 * mib},
				"b": {Name: "w2", Component: "webhooks", CPUSeconds: 4, RSSBytes: 32 * mib}}),
			rss:  map[string]float64{"webhooks": 63},
			cpu:  map[string]float64{"webhooks": 1.5},
			pods: map[string]int{"webhooks": 2},
		},
		{
			name:   "a pod replaced during the window",
			before: snap(0, map[string]PodSample{"a": {Name: "m-1", Component: "manager"}}),
			after:  snap(time.Minute, map[string]PodSample{"b": {Name: "m-2", Component: "manager"}}),
			err:    "m-1 went, m-2 appeared",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u, err := c.after.Usage(c.before)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for comp, want := range c.rss {
				if !near(u.RSSMiB[comp], want) {
					t.Errorf("RSS of %s = %v MiB, want %v", comp, u.RSSMiB[comp], want)
				}
			}
			for comp, want := range c.cpu {
				if !near(u.CPUPerMin[comp], want) {
					t.Errorf("CPU of %s = %v s/min, want %v", comp, u.CPUPerMin[comp], want)
				}
			}
			for comp, want := range c.pods {
				if u.Pods[comp] != want {
					t.Errorf("pods of %s = %d, want %d", comp, u.Pods[comp], want)
				}
			}
			var rss, cpu float64
			for comp := range c.rss {
				rss, cpu = rss+c.rss[comp], cpu+c.cpu[comp]
			}
			if !near(u.TotalRSSMiB(), rss) || !near(u.TotalCPUPerMin(), cpu) {
				t.Errorf("totals %v MiB %v s/min, want %v and %v", u.TotalRSSMiB(), u.TotalCPUPerMin(), rss, cpu)
			}
		})
	}
}

func TestFleetMarkdown(t *testing.T) {
	usage := func(rss, cpu float64) RestUsage {
		return RestUsage{RSSMiB: map[string]float64{"cluster-controller": rss, "webhooks": 60},
			CPUPerMin: map[string]float64{"cluster-controller": cpu, "webhooks": 0.2}, Pods: map[string]int{"cluster-controller": 1, "webhooks": 2}}
	}
	m := FleetMode{Mode: "split", DeletedMembers: 100, Deleted: 42.5, Points: []FleetPoint{
		{Members: 10, Added: 10, Ready: 12.3, Usage: usage(40, 0.3), Writes: 0, LeaseWrites: 150},
		{Members: 100, Added: 90, Ready: 80, Usage: usage(85, 1.2), Writes: 9, LeaseWrites: 150},
	}}
	m.Points[1].Usage.FileMiB = map[string]float64{"cluster-controller": 27.5, "webhooks": 50}
	m.Points[1].Usage.PSSMiB = map[string]float64{"cluster-controller": 70, "webhooks": 35.5}
	pm, err := m.PerMember()
	if err != nil {
		t.Fatal(err)
	}
	if pm.From != 10 || pm.To != 100 || !near(pm.RSSMiB, 0.5) || !near(pm.CPUms, 10) || !near(pm.Writes, 0.1) {
		t.Errorf("PerMember = %+v, want 10 → 100, 0.5 MiB, 10 ms/min, 0.1 writes/min", pm)
	}
	got := FleetMarkdown([]FleetMode{m})
	for _, want := range []string{
		"| split | 10 | 12.30 s to Ready (+10) | 100.0 MiB | cluster 40.0, webhooks(2) 60.0 | 0.50 s/min | cluster 0.30, webhooks(2) 0.20 | 0.0/min | 150.0/min |",
		"| split | 100 | 80.00 s to Ready (+90) | 145.0 MiB (binaries 77.5; PSS 105.5) | cluster 85.0, webhooks(2) 60.0 |",
		"| split | per member (10 → 100) |  | 0.5 MiB |  | 10.0 ms/min |  | 0.1/min |  |",
		"| split | 100 → 0 | 42.50 s until every ValkeyNode and pod is gone |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if _, err := (FleetMode{Mode: "combined", Points: []FleetPoint{{Members: 10}}}).PerMember(); err == nil {
		t.Error("PerMember of one point: no error")
	}
}

func near(a, b float64) bool {
	d := a - b
	return d < 1e-9 && d > -1e-9
}

func TestParseCounts(t *testing.T) {
	cases := []struct {
		in   string
		want []int
		err  string
	}{
		{in: "10,50,100", want: []int{10, 50, 100}},
		{in: " 5 , 20", want: []int{5, 20}},
		{in: "7", want: []int{7}},
		{in: "", err: "want positive numbers"},
		{in: "10,x", err: "want positive numbers"},
		{in: "0,10", err: "want positive numbers"},
		{in: "50,10", err: "want increasing numbers (10 after 50)"},
		{in: "10,10", err: "want increasing numbers (10 after 10)"},
	}
	for _, c := range cases {
		got, err := ParseCounts(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseCounts(%q) error %v, want one containing %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseCounts(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}
