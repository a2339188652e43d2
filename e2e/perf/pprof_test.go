package perf

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSaveHeapProfile: the profile is the endpoint's answer, asked with a collection
// first when collect is set; an error status writes nothing.
func TestSaveHeapProfile(t *testing.T) {
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.String())
		if r.URL.Path != "/debug/pprof/heap" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("profile"))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	for _, collect := range []bool{false, true} {
		path := filepath.Join(dir, "heap.pb.gz")
		if err := SaveHeapProfile(context.Background(), addr, path, collect); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != "profile" {
			t.Errorf("collect=%t: file holds %q, %v", collect, b, err)
		}
	}
	if want := []string{"/debug/pprof/heap", "/debug/pprof/heap?gc=1"}; strings.Join(asked, " ") != strings.Join(want, " ") {
		t.Errorf("asked %v, want %v", asked, want)
	}
	missing := filepath.Join(dir, "none.pb.gz")
	if err := SaveHeapProfile(context.Background(), addr+"/nowhere", missing, false); err == nil {
		t.Error("no error for an address that serves no profile")
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("a file was written for a failed request")
	}
}
