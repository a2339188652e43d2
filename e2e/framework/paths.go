package framework

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/valkey-operator/valkey-operator/localkube"
)

// Paths locates the repository, its cache and the programs the suites run.
type Paths struct {
	// RepoRoot is the repository checkout (the folder holding go.work).
	RepoRoot string
	// CacheDir holds binaries, images and the local cluster's state.
	CacheDir string
	// Localkube is the localkube binary (built by the Makefile into bin/).
	Localkube string
	// Kubectl is the kubectl binary.
	Kubectl string
}

// KubernetesVersion is the Kubernetes the suites run on and render the chart for: the
// local Kubernetes' version, and kind's node image's.
const KubernetesVersion = localkube.KubernetesVersion

// FindRepoRoot finds the repository's root from the working directory upwards.
func FindRepoRoot() (string, error) { return localkube.FindRepoRoot() }

// DiscoverPaths finds the repository from the working directory (or E2E_REPO_ROOT) and
// the programs under it; getenv is os.Getenv outside tests.
func DiscoverPaths(getenv func(string) string) (Paths, error) {
	root := getenv("E2E_REPO_ROOT")
	if root == "" {
		r, err := localkube.FindRepoRoot()
		if err != nil {
			return Paths{}, fmt.Errorf("find repository root: %w", err)
		}
		root = r
	}
	return pathsUnder(root, getenv), nil
}

// pathsUnder fills Paths for a repository at root, honouring the overrides in getenv.
func pathsUnder(root string, getenv func(string) string) Paths {
	p := Paths{RepoRoot: root, CacheDir: getenv("LOCALKUBE_CACHE")}
	if p.CacheDir == "" {
		p.CacheDir = filepath.Join(root, ".cache")
	}
	p.Localkube = getenv("E2E_LOCALKUBE")
	if p.Localkube == "" {
		p.Localkube = filepath.Join(root, "bin", "localkube")
	}
	p.Kubectl = getenv("E2E_KUBECTL")
	if p.Kubectl == "" {
		p.Kubectl = filepath.Join(p.CacheDir, "k8s", localkube.KubernetesVersion, "bin", "kubectl")
		if _, err := os.Stat(p.Kubectl); err != nil {
			if found, err := exec.LookPath("kubectl"); err == nil {
				p.Kubectl = found
			}
		}
	}
	return p
}

// localkubeConfig is the localkube configuration matching these paths.
func (p Paths) localkubeConfig() localkube.Config {
	return localkube.Config{RepoRoot: p.RepoRoot, CacheDir: p.CacheDir}
}
