package perf

import (
	"fmt"
	"strconv"
	"strings"
)

// Point is a value Y measured at X.
type Point struct{ X, Y float64 }

// Slope is the change of Y per unit of X from the point of smallest X to the point of
// largest X (the first of each when several share it): what one more unit of X costs,
// with the fixed part that a ratio Y/X at one point would include taken out.
func Slope(points []Point) (float64, error) {
	if len(points) < 2 {
		return 0, fmt.Errorf("slope: want at least 2 points, have %d", len(points))
	}
	lo, hi := points[0], points[0]
	for _, p := range points[1:] {
		if p.X < lo.X {
			lo = p
		}
		if p.X > hi.X {
			hi = p
		}
	}
	if hi.X == lo.X {
		return 0, fmt.Errorf("slope: every point is at x=%g", lo.X)
	}
	return (hi.Y - lo.Y) / (hi.X - lo.X), nil
}

// ParseCounts reads a comma-separated list of increasing positive numbers ("10,50,100").
func ParseCounts(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want positive numbers separated by commas", s)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("%q: want increasing numbers (%d after %d)", s, n, out[len(out)-1])
		}
		out = append(out, n)
	}
	return out, nil
}

// FleetPoint is the operator at rest with a number of members (bench item 9).
type FleetPoint struct {
	Members int `json:"members"`
	// Added is how many members the last batch created; Ready the seconds from the
	// batch's first create to every cluster Ready.
	Added int     `json:"added"`
	Ready float64 `json:"ready_seconds"`
	// Usage is the operator's memory and CPU over the window at rest.
	Usage RestUsage `json:"usage"`
	// Writes and LeaseWrites are the operator's API writes per minute over the window,
	// leader election aside and its Lease renewals.
	Writes      float64 `json:"writes_per_min"`
	LeaseWrites float64 `json:"lease_writes_per_min"`
	// LoadAtRest is the machine's 1-minute load average at the end of the window, where
	// the members' servers run on the same machine (e2e/standin); 0 when not read.
	LoadAtRest float64 `json:"load_at_rest,omitempty"`
}

// FleetMode is item 9 for one way of running the controllers.
type FleetMode struct {
	Mode   string       `json:"mode"`
	Points []FleetPoint `json:"points"`
	// Deleted is the seconds from deleting every cluster to every ValkeyNode and pod
	// gone; DeletedMembers how many members that was.
	Deleted        float64 `json:"deleted_seconds"`
	DeletedMembers int     `json:"deleted_members"`
}

// PerMember is what one more member costs the operator at rest: slopes between the
// smallest and the largest number of members measured.
type PerMember struct {
	From, To int
	// RSSMiB is MiB per member; CPUms CPU milliseconds per minute per member; Writes
	// API writes per minute per member, leader election aside.
	RSSMiB, CPUms, Writes float64
}

// PerMember computes the slopes of the mode's points.
func (m FleetMode) PerMember() (PerMember, error) {
	var rss, cpu, writes []Point
	pm := PerMember{}
	for i, p := range m.Points {
		x := float64(p.Members)
		rss = append(rss, Point{x, p.Usage.TotalRSSMiB()})
		cpu = append(cpu, Point{x, p.Usage.TotalCPUPerMin() * 1000})
		writes = append(writes, Point{x, p.Writes})
		if i == 0 || p.Members < pm.From {
			pm.From = p.Members
		}
		pm.To = max(pm.To, p.Members)
	}
	var err error
	if pm.RSSMiB, err = Slope(rss); err != nil {
		return pm, fmt.Errorf("%s members: %w", m.Mode, err)
	}
	pm.CPUms, _ = Slope(cpu)
	pm.Writes, _ = Slope(writes)
	return pm, nil
}

// FleetMarkdown renders item 9 as one table: a row per mode and number of members, then
// per mode the cost of one more member and the deletion of them all.
func FleetMarkdown(modes []FleetMode) string {
	var b strings.Builder
	b.WriteString("| Mode | Members | Time | RSS total | RSS by component (MiB) | CPU at rest | CPU by component (s/min) | API writes at rest, leases aside | Lease writes |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, m := range modes {
		for _, p := range m.Points {
			rss := FormatValue(p.Usage.TotalRSSMiB(), UnitMiB)
			var parts []string
			if file := p.Usage.TotalFileMiB(); file > 0 {
				parts = append(parts, "binaries "+strconv.FormatFloat(file, 'f', 1, 64))
			}
			if pss := p.Usage.TotalPSSMiB(); pss > 0 {
				parts = append(parts, "PSS "+strconv.FormatFloat(pss, 'f', 1, 64))
			}
			if len(parts) > 0 {
				rss += " (" + strings.Join(parts, "; ") + ")"
			}
			fmt.Fprintf(&b, "| %s | %d | %s to Ready (+%d) | %s | %s | %s | %s | %s | %s |\n", m.Mode, p.Members,
				FormatValue(p.Ready, UnitSeconds), p.Added, rss, byComponent(p.Usage.RSSMiB, p.Usage.Pods, 1),
				FormatValue(p.Usage.TotalCPUPerMin(), UnitCPUPerMin), byComponent(p.Usage.CPUPerMin, p.Usage.Pods, 2),
				FormatValue(p.Writes, UnitPerMin), FormatValue(p.LeaseWrites, UnitPerMin))
		}
		if pm, err := m.PerMember(); err == nil {
			fmt.Fprintf(&b, "| %s | per member (%d → %d) |  | %s |  | %s |  | %s |  |\n", m.Mode, pm.From, pm.To,
				FormatValue(pm.RSSMiB, UnitMiB), FormatValue(pm.CPUms, UnitCPUmsPerMin), FormatValue(pm.Writes, UnitPerMin))
		}
		if m.DeletedMembers > 0 {
			fmt.Fprintf(&b, "| %s | %d → 0 | %s until every ValkeyNode and pod is gone |  |  |  |  |  |  |\n", m.Mode, m.DeletedMembers,
				FormatValue(m.Deleted, UnitSeconds))
		}
	}
	return b.String()
}

// byComponent prints "cluster 41.2, node 38.0, webhooks(2) 60.1": components without
// their "-controller", the pod count when more than one, values with decimals digits.
func byComponent(values map[string]float64, pods map[string]int, decimals int) string {
	parts := make([]string, 0, len(values))
	for _, comp := range SortedKeys(values) {
		name := strings.TrimSuffix(comp, "-controller")
		if pods[comp] > 1 {
			name += "(" + strconv.Itoa(pods[comp]) + ")"
		}
		parts = append(parts, name+" "+strconv.FormatFloat(values[comp], 'f', decimals, 64))
	}
	return strings.Join(parts, ", ")
}
