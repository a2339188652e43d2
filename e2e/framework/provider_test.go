package framework

import (
	"path/filepath"
	"testing"
)

func TestProviderFromEnv(t *testing.T) {
	tests := []struct {
		value   string
		want    ProviderName
		wantErr bool
	}{
		{"", ProviderLocal, false},
		{"local", ProviderLocal, false},
		{" Kind ", ProviderKind, false},
		{"kind", ProviderKind, false},
		{"minikube", "", true},
	}
	for _, tt := range tests {
		got, err := ProviderFromEnv(getenvFrom(map[string]string{"E2E_PROVIDER": tt.value}))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("E2E_PROVIDER=%q: got %q, %v; want %q (error %t)", tt.value, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestWorkersFromEnv(t *testing.T) {
	tests := []struct {
		value   string
		want    int
		wantErr bool
	}{
		{"", DefaultWorkers, false},
		{"5", 5, false},
		{"0", 0, true},
		{"three", 0, true},
	}
	for _, tt := range tests {
		got, err := workersFromEnv(getenvFrom(map[string]string{"E2E_NODES": tt.value}))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("E2E_NODES=%q: got %d, %v; want %d (error %t)", tt.value, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestNewProviderChoosesImplementation(t *testing.T) {
	o := ProviderOptions{Runner: newFakeRunner(), Getenv: getenvFrom(nil)}
	p, err := NewProvider(ProviderLocal, o)
	if _, ok := p.(*LocalProvider); err != nil || !ok {
		t.Errorf("local: got %T, %v", p, err)
	}
	p, err = NewProvider(ProviderKind, o)
	if _, ok := p.(*KindProvider); err != nil || !ok {
		t.Errorf("kind: got %T, %v", p, err)
	}
	if p.Workers() != DefaultWorkers {
		t.Errorf("kind workers = %d, want %d", p.Workers(), DefaultWorkers)
	}
	if _, err := NewProvider("other", o); err == nil {
		t.Error("unknown provider: no error")
	}
}

func TestPathsUnder(t *testing.T) {
	root := t.TempDir()
	p := pathsUnder(root, getenvFrom(nil))
	if p.CacheDir != filepath.Join(root, ".cache") || p.Localkube != filepath.Join(root, "bin", "localkube") {
		t.Errorf("defaults: %+v", p)
	}
	p = pathsUnder(root, getenvFrom(map[string]string{"LOCALKUBE_CACHE": "/c", "E2E_KUBECTL": "/k", "E2E_LOCALKUBE": "/l"}))
	if p.CacheDir != "/c" || p.Kubectl != "/k" || p.Localkube != "/l" {
		t.Errorf("overrides: %+v", p)
	}
}
