package framework

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/valkey-operator/valkey-operator/images"
)

// writeManifest writes an image manifest with two images under cache and returns it.
func writeManifest(t *testing.T, cache string) images.Manifest {
	t.Helper()
	m := images.Manifest{Images: []images.Image{
		{Ref: "docker.io/valkey/valkey:8.0.1", Tags: []string{"docker.io/valkey/valkey:8.0.1", "docker.io/valkey/valkey:8.0"},
			File: filepath.Join(cache, "images", "valkey-8.0.1.tar"), Component: images.ComponentValkey, Version: "8.0.1"},
		{Ref: "docker.io/local/toolbox:dev", Tags: []string{"docker.io/local/toolbox:dev"},
			File: filepath.Join(cache, "images", "toolbox.tar"), Component: images.ComponentToolbox, Version: "8.0.1"},
	}}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(cache, "images"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, "images", "manifest.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return m
}

// writeFile creates a file with its folders.
func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
