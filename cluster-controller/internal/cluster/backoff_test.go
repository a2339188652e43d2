package cluster

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestErrorBackoffCapped: a cluster whose passes keep failing is tried again at most
// maxErrorBackoff later, however many failures came before; a success starts over.
func TestErrorBackoffCapped(t *testing.T) {
	rl := errorBackoff()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "vk"}}
	var last time.Duration
	for range 40 {
		last = rl.When(req)
	}
	if last != maxErrorBackoff {
		t.Errorf("after 40 failures the next pass waits %s, want %s", last, maxErrorBackoff)
	}
	rl.Forget(req)
	if d := rl.When(req); d > 10*time.Millisecond {
		t.Errorf("the first failure after a success waits %s, want 5ms", d)
	}
}
