package framework

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const cid = "4f1c0ffee0ddba11"

// fakeProc writes /proc/<pid>/{cgroup,status} for each process.
func fakeProc(t *testing.T, procs map[int][2]string) string {
	t.Helper()
	root := t.TempDir()
	for pid, p := range procs {
		dir := filepath.Join(root, fmt.Sprint(pid))
		writeFile(t, filepath.Join(dir, "cgroup"), p[0])
		writeFile(t, filepath.Join(dir, "status"), "Name:\tx\nNSpid:\t"+p[1]+"\nVmRSS:\t1 kB\n")
	}
	writeFile(t, filepath.Join(root, "self", "status"), "NSpid:\t1\n")
	return root
}

func TestFindContainerInit(t *testing.T) {
	cg := "12:memory:/vkn1/kubepods/besteffort/pod1234/" + cid + "\n"
	tests := []struct {
		name    string
		procs   map[int][2]string
		want    int
		wantErr string
	}{
		{
			name: "the init process, not an exec'd one nor another container",
			procs: map[int][2]string{
				4000: {cg, "4000 1"},
				4100: {cg, "4100 7"},
				4200: {"12:memory:/vkn1/kubepods/besteffort/pod1234/other\n", "4200 1"},
				1:    {"0::/init.scope\n", "1"},
			},
			want: 4000,
		},
		{name: "nested namespaces (kind)", procs: map[int][2]string{5000: {cg, "5000 312 1"}}, want: 5000},
		{name: "container not on this machine", procs: map[int][2]string{1: {"0::/\n", "1"}}, wantErr: "no process of container"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := findContainerInit(fakeProc(t, tt.procs), cid)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func TestContainerID(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
		{Name: "valkey", ContainerID: "containerd://" + cid, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		{Name: "done", ContainerID: "containerd://x", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}},
	}}}
	if id, err := ContainerID(pod, "valkey"); id != cid || err != nil {
		t.Errorf("valkey: %q, %v", id, err)
	}
	if _, err := ContainerID(pod, "done"); err == nil {
		t.Error("terminated container: no error")
	}
	if _, err := ContainerID(pod, "missing"); err == nil {
		t.Error("missing container: no error")
	}
}
