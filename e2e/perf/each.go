package perf

import (
	"fmt"
	"sync"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// EachCluster runs op on every cluster, workers at a time (at least one), and returns
// one message per failed cluster ("namespace/name: error"), in no particular order.
func EachCluster(vcs []*v1alpha1.ValkeyCluster, workers int, op func(*v1alpha1.ValkeyCluster) error) []string {
	work := make(chan *v1alpha1.ValkeyCluster)
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
					errs = append(errs, fmt.Sprintf("%s/%s: %v", vc.Namespace, vc.Name, err))
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
