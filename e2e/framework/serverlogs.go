package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// ServerLogs follows the log of every run of the server containers of a cluster's
// members, so that a failure found at the end of a long feature (an acknowledged write
// lost many restarts ago) still has the logs of each run: the kubelet keeps only the
// current and the previous one. Follow picks up the runs started since its last call.
type ServerLogs struct {
	k    *Cluster
	vc   *v1alpha1.ValkeyCluster
	runs map[string]*LogFollower // "pod_server_run<N>"
}

// NewServerLogs starts following the server logs of vc's members.
func (k *Cluster) NewServerLogs(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster) *ServerLogs {
	l := &ServerLogs{k: k, vc: vc, runs: map[string]*LogFollower{}}
	l.Follow(ctx, t)
	return l
}

// Follow starts following the runs of the server containers not followed yet.
func (l *ServerLogs) Follow(ctx context.Context, t testing.TB) {
	t.Helper()
	for _, p := range l.k.Pods(ctx, t, l.vc) {
		key := fmt.Sprintf("%s_server_run%d", p.Name, ContainerRestarts(&p, "server"))
		if _, ok := l.runs[key]; ok {
			continue
		}
		f, err := l.k.FollowLogs(context.WithoutCancel(ctx), p.Namespace, p.Name, "server")
		if err != nil {
			t.Logf("server logs: %v", err) // a container not started yet: the next call
			continue
		}
		l.runs[key] = f
	}
}

// Stop ends the following; when the test failed, each run's log is written to the
// feature's artifacts folder.
func (l *ServerLogs) Stop(t testing.TB) {
	t.Helper()
	for _, f := range l.runs {
		f.Stop()
	}
	if !t.Failed() || len(l.runs) == 0 {
		return
	}
	dir := filepath.Join(l.k.artifactsDir(), l.vc.Namespace, "server-runs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("server logs: %v", err)
		return
	}
	for key, f := range l.runs {
		if err := os.WriteFile(filepath.Join(dir, key+".log"), []byte(f.String()), 0o644); err != nil {
			t.Logf("server logs: %v", err)
		}
	}
	t.Logf("the log of every run of the members' servers is in %s", dir)
}
