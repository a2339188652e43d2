package standin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/valkey-operator/valkey-operator/internal/envtestenv"
)

// Tools are the programs a stand-in run needs besides the API server's.
type Tools struct {
	// Root is the repository; Helm the chart tool; Bin the operator's binaries.
	Root, Helm, Bin string
}

// FindTools finds the repository root, helm (hack/tools/bin/helm, which `make deps`
// installs, or on PATH) and the operator's binaries: $STANDIN_BIN when set (`make
// bench-fleet-standin` builds them there), else built into dir.
func FindTools(ctx context.Context, dir string) (Tools, error) {
	root, err := envtestenv.RepoRoot()
	if err != nil {
		return Tools{}, err
	}
	t := Tools{Root: root}
	if t.Helm, err = FindHelm(root); err != nil {
		return Tools{}, err
	}
	if _, err := exec.LookPath("valkey-server"); err != nil {
		return Tools{}, fmt.Errorf("the stand-in runs valkey-server from PATH: %w", err)
	}
	if t.Bin = os.Getenv("STANDIN_BIN"); t.Bin != "" {
		for _, c := range Components {
			if _, err := os.Stat(filepath.Join(t.Bin, c)); err != nil {
				return Tools{}, fmt.Errorf("STANDIN_BIN=%s: %w", t.Bin, err)
			}
		}
		return t, nil
	}
	t.Bin = filepath.Join(dir, "bin")
	return t, BuildOperator(ctx, root, t.Bin)
}

// FindHelm returns hack/tools/bin/helm under root, which `make deps` installs, or helm
// on PATH.
func FindHelm(root string) (string, error) {
	helm := filepath.Join(root, "hack", "tools", "bin", "helm")
	if _, err := os.Stat(helm); err == nil {
		return helm, nil
	}
	if helm, err := exec.LookPath("helm"); err == nil {
		return helm, nil
	}
	return "", errors.New("helm is not in hack/tools/bin nor on PATH: run `make deps`")
}

// AddressOctet picks the second byte of the pods' addresses for this process, so that
// two runs on one machine (a test and a bench) use different ones: 127.64.0.0 to
// 127.191.255.255.
func AddressOctet() int { return 64 + os.Getpid()%128 }
