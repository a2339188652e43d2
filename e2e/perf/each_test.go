package perf

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// Every cluster is visited once, and each failure comes back naming its cluster.
func TestEachCluster(t *testing.T) {
	var vcs []*v1alpha1.ValkeyCluster
	for i := range 20 {
		vcs = append(vcs, &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("c%d", i)}})
	}
	for _, workers := range []int{0, 1, 8} {
		var calls atomic.Int32
		errs := EachCluster(vcs, workers, func(vc *v1alpha1.ValkeyCluster) error {
			calls.Add(1)
			if vc.Name == "c3" || vc.Name == "c17" {
				return errors.New("refused")
			}
			return nil
		})
		slices.Sort(errs)
		if calls.Load() != 20 || !slices.Equal(errs, []string{"ns/c17: refused", "ns/c3: refused"}) {
			t.Errorf("workers %d: %d calls, errors %q", workers, calls.Load(), errs)
		}
	}
}
