package perf

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// SaveHeapProfile writes the heap profile a Go process serves on its profiling endpoint
// at addr (host:port, --pprof-bind-address) to path, for `go tool pprof`. With collect
// the process runs a garbage collection first, so in-use figures are those of now.
func SaveHeapProfile(ctx context.Context, addr, path string, collect bool) error {
	url := "http://" + addr + "/debug/pprof/heap"
	if collect {
		url += "?gc=1"
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("get %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
