package perf

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PodSample is one operator pod's counters at one scrape.
type PodSample struct {
	Name       string
	Component  string
	CPUSeconds float64
	RSSBytes   float64
	// FileBytes is the part of RSSBytes that maps files (the binary's code and data, pages
	// the kernel can read again), when the sample knows it (the stand-in's /proc); 0
	// otherwise.
	FileBytes float64
	// PSSBytes is the process's proportional set size (perf.ProcessMemory.PSS), when the
	// sample knows it; 0 otherwise.
	PSSBytes float64
}

// OperatorSnapshot is every running operator pod's counters at one time, by pod UID.
type OperatorSnapshot struct {
	At   time.Time
	Pods map[string]PodSample
}

// SnapshotOperator scrapes every running operator pod in namespace once (pods being
// deleted are left out); a pod that does not answer fails the snapshot.
func SnapshotOperator(ctx context.Context, c client.Client, namespace string) (OperatorSnapshot, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
		return OperatorSnapshot{}, fmt.Errorf("list the operator's pods: %w", err)
	}
	snap := OperatorSnapshot{At: time.Now(), Pods: map[string]PodSample{}}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []string
	)
	for i := range pods.Items {
		p := &pods.Items[i]
		comp := p.Labels[ComponentLabel]
		if comp == "" || p.Status.PodIP == "" || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			series, err := httpMetrics(ctx, "http://"+p.Status.PodIP+":8080/metrics", 5*time.Second)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, p.Name+": "+err.Error())
				return
			}
			snap.Pods[string(p.UID)] = PodSample{Name: p.Name, Component: comp,
				CPUSeconds: Sum(series, "process_cpu_seconds_total", nil), RSSBytes: Sum(series, "process_resident_memory_bytes", nil)}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return snap, fmt.Errorf("scrape the operator's pods: %s", strings.Join(errs, "; "))
	}
	return snap, nil
}

// RestUsage is what each operator component used over a window: its resident memory at
// the window's end and its CPU time per minute, each summed over its pods.
type RestUsage struct {
	Seconds float64 `json:"window_seconds"`
	// RSSMiB maps component -> MiB resident at the end.
	RSSMiB map[string]float64 `json:"rss_mib"`
	// FileMiB maps component -> MiB of RSSMiB that map files (the binaries), where known.
	FileMiB map[string]float64 `json:"file_mib,omitempty"`
	// PSSMiB maps component -> MiB of proportional set size at the end, where known:
	// summed over the components, what the machine holds for them (pages they share
	// counted once).
	PSSMiB map[string]float64 `json:"pss_mib,omitempty"`
	// CPUPerMin maps component -> CPU seconds used per minute.
	CPUPerMin map[string]float64 `json:"cpu_seconds_per_min"`
	// Pods maps component -> pods.
	Pods map[string]int `json:"pods"`
}

// Usage returns the usage from earlier to s. The two snapshots must see the same pods:
// a pod that came or went in between (a restart) would make its CPU time meaningless.
func (s OperatorSnapshot) Usage(earlier OperatorSnapshot) (RestUsage, error) {
	var changed []string
	for uid, p := range s.Pods {
		if _, ok := earlier.Pods[uid]; !ok {
			changed = append(changed, p.Name+" appeared")
		}
	}
	for uid, p := range earlier.Pods {
		if _, ok := s.Pods[uid]; !ok {
			changed = append(changed, p.Name+" went")
		}
	}
	if len(changed) > 0 {
		return RestUsage{}, fmt.Errorf("the operator's pods changed during the window: %s", strings.Join(sortedStrings(changed), ", "))
	}
	secs := s.At.Sub(earlier.At).Seconds()
	u := RestUsage{Seconds: secs, RSSMiB: map[string]float64{}, CPUPerMin: map[string]float64{}, Pods: map[string]int{}}
	for uid, p := range s.Pods {
		u.RSSMiB[p.Component] += p.RSSBytes / (1 << 20)
		addKnownMiB(&u.FileMiB, p.Component, p.FileBytes)
		addKnownMiB(&u.PSSMiB, p.Component, p.PSSBytes)
		u.CPUPerMin[p.Component] += Ratio((p.CPUSeconds-earlier.Pods[uid].CPUSeconds)*60, secs)
		u.Pods[p.Component]++
	}
	return u, nil
}

// addKnownMiB adds bytes, in MiB, to (*m)[component] when known (above 0), making the map
// on first use: a map stays nil for figures the samples do not know.
func addKnownMiB(m *map[string]float64, component string, bytes float64) {
	if bytes <= 0 {
		return
	}
	if *m == nil {
		*m = map[string]float64{}
	}
	(*m)[component] += bytes / (1 << 20)
}

// TotalRSSMiB sums the resident memory over the components.
func (u RestUsage) TotalRSSMiB() float64 { return sumValues(u.RSSMiB) }

// TotalFileMiB sums the file-mapped part of the resident memory (0 when unknown).
func (u RestUsage) TotalFileMiB() float64 { return sumValues(u.FileMiB) }

// TotalPSSMiB sums the proportional set sizes (0 when unknown).
func (u RestUsage) TotalPSSMiB() float64 { return sumValues(u.PSSMiB) }

// TotalCPUPerMin sums the CPU seconds per minute over the components.
func (u RestUsage) TotalCPUPerMin() float64 { return sumValues(u.CPUPerMin) }

func sumValues(m map[string]float64) float64 {
	var t float64
	for _, k := range SortedKeys(m) {
		t += m[k]
	}
	return t
}

func sortedStrings(s []string) []string {
	m := map[string]bool{}
	for _, x := range s {
		m[x] = true
	}
	return SortedKeys(m)
}
