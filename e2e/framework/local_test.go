package framework

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: localkube
  cluster: {server: "https://10.99.0.1:6443"}
contexts:
- name: localkube
  context: {cluster: localkube, user: admin}
current-context: localkube
users:
- name: admin
  user: {token: x}
`

// newTestLocal returns a local provider over a temporary repository whose cache holds
// a kubeconfig and an image manifest, with a fake runner.
func newTestLocal(t *testing.T, keep bool) (*LocalProvider, *fakeRunner) {
	t.Helper()
	root := t.TempDir()
	paths := pathsUnder(root, getenvFrom(nil))
	writeFile(t, paths.Localkube, "")
	writeFile(t, filepath.Join(paths.CacheDir, "localkube", "run", "kubeconfig"), testKubeconfig)
	writeManifest(t, paths.CacheDir)
	r := newFakeRunner()
	var progress strings.Builder
	return NewLocalProvider(ProviderOptions{Paths: paths, Runner: r, Keep: keep, Progress: &progress}), r
}

func TestLocalReusesRunningCluster(t *testing.T) {
	p, r := newTestLocal(t, false)
	r.on(p.opts.Paths.Localkube+" status", "etcd running\nhealthy: 2 nodes\nexport KUBECONFIG=x\n", nil)
	ctx := context.Background()
	kc, err := p.Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.StartedHere() || p.Workers() != 2 {
		t.Errorf("startedHere=%t workers=%d, want false, 2", p.StartedHere(), p.Workers())
	}
	if kc != filepath.Join(p.opts.Paths.CacheDir, "localkube", "run", "kubeconfig") || p.KubernetesRestConfig().Host != "https://10.99.0.1:6443" {
		t.Errorf("kubeconfig %s, host %s", kc, p.KubernetesRestConfig().Host)
	}
	if p.GetKubectlContext() != "localkube" {
		t.Errorf("context %q", p.GetKubectlContext())
	}
	if err := p.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range r.commands() {
		if strings.Contains(c, " up ") || strings.Contains(c, " down ") {
			t.Errorf("ran %q on a cluster it found running", c)
		}
	}
}

func TestLocalBringsUpAndDown(t *testing.T) {
	for _, keep := range []bool{false, true} {
		p, r := newTestLocal(t, keep)
		lk, cache, root := p.opts.Paths.Localkube, p.opts.Paths.CacheDir, p.opts.Paths.RepoRoot
		r.on(lk+" status", "", errors.New("not running"))
		ctx := context.Background()
		if _, err := p.Create(ctx); err != nil {
			t.Fatal(err)
		}
		if err := p.Destroy(ctx); err != nil {
			t.Fatal(err)
		}
		flags := " --cache-dir " + cache + " --repo-root " + root
		want := []string{lk + " status" + flags, lk + " up" + flags + " --nodes 3"}
		if !keep {
			want = append(want, lk+" down"+flags)
		}
		if got := r.commands(); !reflect.DeepEqual(got, want) {
			t.Errorf("keep=%t: commands\n%s\nwant\n%s", keep, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

func TestLocalLinkAndImages(t *testing.T) {
	p, r := newTestLocal(t, false)
	ctx := context.Background()
	if err := p.CutLink(ctx, "n2"); err != nil {
		t.Fatal(err)
	}
	if err := p.RestoreLink(ctx, "n2"); err != nil {
		t.Fatal(err)
	}
	if err := p.CutLink(ctx, "worker-1"); err == nil {
		t.Error("CutLink of a non-local node name: no error")
	}
	if err := p.LoadImage(ctx, "docker.io/local/toolbox:dev"); err != nil {
		t.Fatal(err)
	}
	if err := p.LoadImage(ctx, "example.org/missing:1"); err == nil {
		t.Error("LoadImage of an image outside the manifest: no error")
	}
	lk, flags := p.opts.Paths.Localkube, " --cache-dir "+p.opts.Paths.CacheDir+" --repo-root "+p.opts.Paths.RepoRoot
	want := []string{
		lk + " link" + flags + " 2 down",
		lk + " link" + flags + " 2 up",
		lk + " load" + flags + " " + filepath.Join(p.opts.Paths.CacheDir, "images", "toolbox.tar"),
	}
	if got := r.commands(); !reflect.DeepEqual(got, want) {
		t.Errorf("commands\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLocalExportLogs(t *testing.T) {
	p, _ := newTestLocal(t, false)
	run := filepath.Join(p.opts.Paths.CacheDir, "localkube", "run")
	writeFile(t, filepath.Join(run, "logs", "kube-apiserver.log"), "api")
	writeFile(t, filepath.Join(run, "nodes", "n1", "logs", "kubelet.log"), "kubelet")
	writeFile(t, filepath.Join(run, "nodes", "n1", "pod-logs", "ns_pod_uid", "valkey", "0.log"), "valkey")
	dest := t.TempDir()
	if err := p.ExportLogs(context.Background(), dest); err != nil {
		t.Fatal(err)
	}
	for path, body := range map[string]string{
		"control-plane/kube-apiserver.log":      "api",
		"nodes/n1/components/kubelet.log":       "kubelet",
		"nodes/n1/pods/ns_pod_uid/valkey/0.log": "valkey",
	} {
		b, err := os.ReadFile(filepath.Join(dest, path))
		if err != nil || string(b) != body {
			t.Errorf("%s: %q, %v; want %q", path, b, err, body)
		}
	}
}

func TestLocalNodeIndex(t *testing.T) {
	for name, want := range map[string]int{"n1": 1, "n12": 12, "n0": 0, "x1": 0, "n": 0} {
		got, err := localNodeIndex(name)
		if got != want || (want == 0) != (err != nil) {
			t.Errorf("%s: %d, %v; want %d", name, got, err, want)
		}
	}
}

func TestFinishReportsDestroyFailure(t *testing.T) {
	p, r := newTestLocal(t, false)
	r.on(p.opts.Paths.Localkube+" down", "", errors.New("processes still running"))
	p.startedHere = true
	k := &Cluster{Suite: "s", Provider: p, Paths: p.opts.Paths}
	if _, err := k.finish(context.Background(), nil); err == nil {
		t.Fatal("finish: no error")
	}
	if err := k.finishError(); err == nil || !strings.Contains(err.Error(), "destroy the cluster") {
		t.Errorf("finishError = %v", err)
	}
}
