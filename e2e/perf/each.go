package perf

import (
	"fmt"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EachCluster runs op on every cluster (ours or the peer's), workers at a time (at least
// one), and returns one message per failed cluster ("namespace/name: error"), in no
// particular order.
func EachCluster[T client.Object](vcs []T, workers int, op func(T) error) []string {
	work := make(chan T)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []string
	)
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for vc := range work {
				if err := op(vc); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Sprintf("%s/%s: %v", vc.GetNamespace(), vc.GetName(), err))
					mu.Unlock()
				}
			}
		}()
	}
	for _, vc := range vcs {
		work <- vc
	}
	close(work)
	wg.Wait()
	return errs
}
