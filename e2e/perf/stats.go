package perf

import (
	"sort"
	"time"
)

// Stat summarises repeated measurements of one quantity.
type Stat struct {
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	Values []float64 `json:"values"`
}

// Summarize returns the median, minimum and maximum of values (the zero Stat for none).
func Summarize(values []float64) Stat {
	if len(values) == 0 {
		return Stat{}
	}
	sorted := append([]float64(nil), values...)
	sort.Float64s(sorted)
	n := len(sorted)
	median := sorted[n/2]
	if n%2 == 0 {
		median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	return Stat{Median: median, Min: sorted[0], Max: sorted[n-1], Values: append([]float64(nil), values...)}
}

// One is the Stat of a single measurement.
func One(v float64) Stat { return Summarize([]float64{v}) }

// Seconds converts durations to seconds, for Summarize.
func Seconds(ds ...time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

// Ratio is a / b, or 0 when b is 0.
func Ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
