package perf

import (
	"context"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ComponentLabel names an operator component on its pods (as the chart sets it).
const ComponentLabel = "app.kubernetes.io/component"

// Usage is what one operator component used while a sampler ran.
type Usage struct {
	// CPUSeconds is the CPU time used (user and system) by its pods.
	CPUSeconds float64 `json:"cpu_seconds"`
	// PeakRSSMiB is the highest resident memory one of its pods had at a sample.
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	// Pods counts the pods seen (more than one after a restart).
	Pods int `json:"pods"`
}

// podUsage follows the counters of one pod.
type podUsage struct {
	component         string
	firstCPU, lastCPU float64
	peakRSS           float64
}

// OperatorSampler reads the CPU time and resident memory of every operator pod from
// its metrics endpoint (controller-runtime serves process_cpu_seconds_total and
// process_resident_memory_bytes on :8080/metrics) at a fixed interval. A pod running
// at Start counts from there; a pod that appears later counts from its own start, so a
// restarted component is covered. CPU used by a pod after its last sample is missed.
type OperatorSampler struct {
	client    client.Client
	namespace string
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	mu        sync.Mutex
	pods      map[string]*podUsage // by pod UID
	atStart   map[string]bool      // UIDs of the pods running at Start
	errors    int
	paused    bool
}

// StartOperatorSampler takes a first sample and then one every interval until Stop.
func StartOperatorSampler(ctx context.Context, c client.Client, namespace string, interval time.Duration) *OperatorSampler {
	s := &OperatorSampler{client: c, namespace: namespace, pods: map[string]*podUsage{}, atStart: map[string]bool{}}
	s.sample(ctx, true)
	ctx, s.cancel = context.WithCancel(ctx)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if !s.isPaused() {
					s.sample(ctx, false)
				}
			}
		}
	}()
	return s
}

// sample reads every running operator pod once. The CPU time of a pod that ran at the
// first sample counts from its first successful scrape; pods found later count from zero.
func (s *OperatorSampler) sample(ctx context.Context, first bool) {
	var pods corev1.PodList
	if err := s.client.List(ctx, &pods, client.InNamespace(s.namespace)); err != nil {
		s.countError()
		return
	}
	var wg sync.WaitGroup
	for i := range pods.Items {
		p := &pods.Items[i]
		comp := p.Labels[ComponentLabel]
		if comp == "" || p.Status.PodIP == "" || p.Status.Phase != corev1.PodRunning {
			continue
		}
		if first {
			s.mu.Lock()
			s.atStart[string(p.UID)] = true
			s.mu.Unlock()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.samplePod(ctx, string(p.UID), comp, p.Status.PodIP)
		}()
	}
	wg.Wait()
}

func (s *OperatorSampler) samplePod(ctx context.Context, uid, comp, ip string) {
	series, err := httpMetrics(ctx, "http://"+ip+":8080/metrics", 2*time.Second)
	if err != nil {
		s.countError()
		return
	}
	cpu := Sum(series, "process_cpu_seconds_total", nil)
	rss := Sum(series, "process_resident_memory_bytes", nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.pods[uid]
	if !ok {
		u = &podUsage{component: comp}
		if s.atStart[uid] {
			u.firstCPU = cpu
		}
		s.pods[uid] = u
	}
	u.lastCPU = max(u.lastCPU, cpu)
	u.peakRSS = max(u.peakRSS, rss)
}

// Pause stops the sampling until Resume, so that a measurement of the operator at rest
// does not count the sampler's own scrapes (each costs the pod some CPU). The CPU
// counters are cumulative, so nothing is lost but the peak RSS of the paused time and
// the CPU of a pod that goes away while paused.
func (s *OperatorSampler) Pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paused = true
}

// Resume samples at once and then at the interval again.
func (s *OperatorSampler) Resume(ctx context.Context) {
	s.mu.Lock()
	s.paused = false
	s.mu.Unlock()
	s.sample(ctx, false)
}

func (s *OperatorSampler) isPaused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused
}

func (s *OperatorSampler) countError() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errors++
}

// Stop takes a last sample and returns the usage per component, and how many scrapes
// failed (a pod being replaced fails a scrape or two).
func (s *OperatorSampler) Stop(ctx context.Context) (map[string]Usage, int) {
	s.cancel()
	s.wg.Wait()
	s.sample(ctx, false)
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]Usage{}
	for _, u := range s.pods {
		c := out[u.component]
		c.CPUSeconds += u.lastCPU - u.firstCPU
		c.PeakRSSMiB = max(c.PeakRSSMiB, u.peakRSS/(1<<20))
		c.Pods++
		out[u.component] = c
	}
	return out, s.errors
}

// SortedKeys returns the keys of a map in order.
func SortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
