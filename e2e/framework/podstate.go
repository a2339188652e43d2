package framework

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// PodsState is the cluster's pods with their UIDs and their containers' restart
// counts, to prove later that an operation replaced or restarted none.
type PodsState struct {
	// UIDs by pod name.
	UIDs map[string]string
	// Restarts by "pod/container".
	Restarts map[string]int32
}

// PodsState records the pods of a cluster now.
func (k *Cluster) PodsState(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster) PodsState {
	t.Helper()
	st := PodsState{UIDs: map[string]string{}, Restarts: map[string]int32{}}
	for _, p := range k.Pods(ctx, t, vc) {
		st.UIDs[p.Name] = string(p.UID)
		for _, cs := range p.Status.ContainerStatuses {
			st.Restarts[p.Name+"/"+cs.Name] = cs.RestartCount
		}
	}
	return st
}

// Changes lists, sorted, what changed since before: pods replaced, gone or added, and
// containers restarted. None means the same pods ran throughout.
func (s PodsState) Changes(before PodsState) []string {
	var out []string
	for name, uid := range before.UIDs {
		switch now, ok := s.UIDs[name]; {
		case !ok:
			out = append(out, fmt.Sprintf("pod %s is gone", name))
		case now != uid:
			out = append(out, fmt.Sprintf("pod %s was replaced (UID %s -> %s)", name, uid, now))
		}
	}
	for name := range s.UIDs {
		if _, ok := before.UIDs[name]; !ok {
			out = append(out, fmt.Sprintf("pod %s is new", name))
		}
	}
	for name, n := range before.Restarts {
		if now, ok := s.Restarts[name]; ok && now != n {
			out = append(out, fmt.Sprintf("container %s restarted (%d -> %d restarts)", name, n, now))
		}
	}
	sort.Strings(out)
	return out
}
