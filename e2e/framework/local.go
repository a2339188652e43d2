package framework

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/support"

	"github.com/valkey-operator/valkey-operator/images"
	"github.com/valkey-operator/valkey-operator/localkube"
)

// InLoadBalancerPool reports whether a is an address the local Kubernetes' load
// balancer hands out.
func InLoadBalancerPool(a netip.Addr) bool { return localkube.InLoadBalancerPool(a) }

// Outside adds a network namespace that routes to the node bridge only (no pod or
// Service network), as a machine outside the cluster would, and returns its name and
// what removes it.
func (p *LocalProvider) Outside(ctx context.Context) (netns string, remove func(), err error) {
	if err := localkube.AddOutside(ctx); err != nil {
		return "", nil, err
	}
	return localkube.OutsideNetns, func() { localkube.RemoveOutside(context.Background()) }, nil
}

// LocalProvider runs the suites on the project's local Kubernetes through the localkube
// command: it reuses a running cluster, or brings one up and then owns it.
type LocalProvider struct {
	opts        ProviderOptions
	name        string
	version     string
	kubeconfig  string
	rc          *rest.Config
	workers     int
	startedHere bool
}

var _ Provider = &LocalProvider{}

// NewLocalProvider returns the local provider; Create starts nothing until called.
func NewLocalProvider(o ProviderOptions) *LocalProvider {
	o = o.withDefaults()
	return &LocalProvider{opts: o, name: "localkube", workers: o.Workers}
}

// ProviderName implements Provider.
func (p *LocalProvider) ProviderName() ProviderName { return ProviderLocal }

// Workers implements Provider.
func (p *LocalProvider) Workers() int { return p.workers }

// StartedHere reports whether Create brought the cluster up (rather than finding it).
func (p *LocalProvider) StartedHere() bool { return p.startedHere }

// SetDefaults implements support.E2EClusterProvider.
func (p *LocalProvider) SetDefaults() support.E2EClusterProvider {
	if p.name == "" {
		p.name = "localkube"
	}
	if p.workers == 0 {
		p.workers = DefaultWorkers
	}
	return p
}

// WithName implements support.E2EClusterProvider. The local cluster has one name; the
// given one only labels logs.
func (p *LocalProvider) WithName(name string) support.E2EClusterProvider {
	p.name = name
	return p
}

// WithVersion implements support.E2EClusterProvider: Create fails unless the version is
// the one localkube builds.
func (p *LocalProvider) WithVersion(version string) support.E2EClusterProvider {
	p.version = version
	return p
}

// WithPath implements support.E2EClusterProvider: the localkube binary.
func (p *LocalProvider) WithPath(path string) support.E2EClusterProvider {
	p.opts.Paths.Localkube = path
	return p
}

// WithOpts implements support.E2EClusterProvider.
func (p *LocalProvider) WithOpts(opts ...support.ClusterOpts) support.E2EClusterProvider {
	for _, o := range opts {
		o(p)
	}
	return p
}

// localkube runs a localkube subcommand with the cache and repository of this provider.
func (p *LocalProvider) localkube(ctx context.Context, echo io.Writer, sub string, args ...string) (string, error) {
	full := append([]string{sub, "--cache-dir", p.opts.Paths.CacheDir, "--repo-root", p.opts.Paths.RepoRoot}, args...)
	return p.opts.Runner.Run(ctx, Command{Name: p.opts.Paths.Localkube, Args: full, Echo: echo})
}

// ensureLocalkube builds the localkube binary when it is missing (the Makefile builds
// it too, and rebuilds it when its sources change).
func (p *LocalProvider) ensureLocalkube(ctx context.Context) error {
	if _, err := os.Stat(p.opts.Paths.Localkube); err == nil {
		return nil
	}
	_, err := p.opts.Runner.Run(ctx, Command{
		Name: "go", Args: []string{"build", "-o", p.opts.Paths.Localkube, "./cmd/localkube"},
		Dir: filepath.Join(p.opts.Paths.RepoRoot, "localkube"), Env: []string{"GOWORK=off", "CGO_ENABLED=0"},
		Echo: p.opts.Progress,
	})
	if err != nil {
		return fmt.Errorf("build localkube: %w", err)
	}
	return nil
}

var healthyNodes = regexp.MustCompile(`(?m)^healthy: (\d+) nodes`)

// running returns the worker count of a running, healthy local cluster, or false.
func (p *LocalProvider) running(ctx context.Context) (int, bool) {
	out, err := p.localkube(ctx, nil, "status")
	if err != nil {
		return 0, false
	}
	m := healthyNodes.FindStringSubmatch(out)
	if m == nil {
		return 0, false
	}
	n, _ := strconv.Atoi(m[1])
	return n, true
}

// Create implements support.E2EClusterProvider: it reuses a running local cluster or
// runs `localkube up`. args are passed to `localkube up`.
func (p *LocalProvider) Create(ctx context.Context, args ...string) (string, error) {
	if p.version != "" && p.version != localkube.KubernetesVersion {
		return "", fmt.Errorf("the local cluster runs Kubernetes %s, not %s", localkube.KubernetesVersion, p.version)
	}
	if err := p.ensureLocalkube(ctx); err != nil {
		return "", err
	}
	if n, ok := p.running(ctx); ok {
		p.workers = n
		fmt.Fprintf(p.opts.Progress, "e2e: reusing the running local cluster (%d nodes); it stays up after the suite\n", n)
	} else {
		up := append([]string{"--nodes", strconv.Itoa(p.workers)}, args...)
		if _, err := p.localkube(ctx, p.opts.Progress, "up", up...); err != nil {
			return "", fmt.Errorf("bring up the local cluster: %w", err)
		}
		p.startedHere = true
	}
	p.kubeconfig = p.opts.Paths.localkubeConfig().Kubeconfig()
	rc, err := clientcmd.BuildConfigFromFlags("", p.kubeconfig)
	if err != nil {
		return "", fmt.Errorf("read kubeconfig %s: %w", p.kubeconfig, err)
	}
	p.rc = rc
	return p.kubeconfig, nil
}

// CreateWithConfig implements support.E2EClusterProvider; the local cluster has no
// configuration file, so configFile must be empty.
func (p *LocalProvider) CreateWithConfig(ctx context.Context, configFile string) (string, error) {
	if configFile != "" {
		return "", fmt.Errorf("the local provider takes no configuration file (got %s)", configFile)
	}
	return p.Create(ctx)
}

// GetKubeconfig implements support.E2EClusterProvider.
func (p *LocalProvider) GetKubeconfig() string { return p.kubeconfig }

// GenerateKubeconfig implements support.E2EClusterProvider: the admin kubeconfig.
func (p *LocalProvider) GenerateKubeconfig(...string) (string, error) {
	if p.kubeconfig == "" {
		return "", fmt.Errorf("the local cluster was not created")
	}
	return p.kubeconfig, nil
}

// GetKubectlContext implements support.E2EClusterProvider.
func (p *LocalProvider) GetKubectlContext() string {
	cfg, err := clientcmd.LoadFromFile(p.opts.Paths.localkubeConfig().Kubeconfig())
	if err != nil {
		return ""
	}
	return cfg.CurrentContext
}

// KubernetesRestConfig implements support.E2EClusterProvider.
func (p *LocalProvider) KubernetesRestConfig() *rest.Config { return p.rc }

// WaitForControlPlane implements support.E2EClusterProvider: every worker Ready and
// untainted, the default service account and the default StorageClass present.
func (p *LocalProvider) WaitForControlPlane(ctx context.Context, c klient.Client) error {
	return waitClusterUsable(ctx, c, p.workers, 3*time.Minute)
}

// waitClusterUsable waits until workers nodes are Ready and the default namespace can
// run pods with volumes.
func waitClusterUsable(ctx context.Context, c klient.Client, workers int, timeout time.Duration) error {
	r := c.Resources()
	return Until(ctx, timeout, "the cluster to be usable", func(ctx context.Context) (bool, string, error) {
		var nodes corev1.NodeList
		if err := r.List(ctx, &nodes); err != nil {
			return false, "", err
		}
		ready := 0
		for i := range nodes.Items {
			if IsWorker(&nodes.Items[i]) && NodeSchedulable(&nodes.Items[i]) {
				ready++
			}
		}
		if ready < workers {
			return false, fmt.Sprintf("%d of %d workers Ready", ready, workers), nil
		}
		var sa corev1.ServiceAccount
		if err := r.Get(ctx, "default", "default", &sa); err != nil {
			return false, "no default service account", nil
		}
		var scs storagev1.StorageClassList
		if err := r.List(ctx, &scs); err != nil {
			return false, "", err
		}
		for _, sc := range scs.Items {
			if sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" {
				return true, "", nil
			}
		}
		return false, "no default StorageClass", nil
	})
}

// ExportLogs implements support.E2EClusterProvider: it copies the control plane's logs
// and each node's component and pod logs under dest.
func (p *LocalProvider) ExportLogs(_ context.Context, dest string) error {
	run := p.opts.Paths.localkubeConfig().RunDir()
	if err := copyTree(filepath.Join(run, "logs"), filepath.Join(dest, "control-plane")); err != nil {
		return err
	}
	nodes, _ := os.ReadDir(filepath.Join(run, "nodes"))
	for _, n := range nodes {
		for sub, to := range map[string]string{"logs": "components", "pod-logs": "pods"} {
			src := filepath.Join(run, "nodes", n.Name(), sub)
			if err := copyTree(src, filepath.Join(dest, "nodes", n.Name(), to)); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyTree copies the regular files under src to dst; a missing src copies nothing.
func copyTree(src, dst string) error {
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		return copyFile(path, filepath.Join(dst, rel))
	})
	if err != nil {
		return fmt.Errorf("copy logs from %s: %w", src, err)
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Destroy implements support.E2EClusterProvider: it runs `localkube down` only when
// Create brought the cluster up and Keep is not set; a cluster found running stays.
func (p *LocalProvider) Destroy(ctx context.Context) error {
	if !p.startedHere {
		return nil
	}
	if p.opts.Keep {
		fmt.Fprintf(p.opts.Progress, "e2e: keeping the local cluster (E2E_KEEP_CLUSTER); stop it with make local-down\n")
		return nil
	}
	if _, err := p.localkube(ctx, p.opts.Progress, "down"); err != nil {
		return fmt.Errorf("bring down the local cluster: %w", err)
	}
	return nil
}

// LoadImage implements support.E2EClusterProviderWithImageLoader: image is a reference
// of the image manifest, whose tarball is imported into every node.
func (p *LocalProvider) LoadImage(ctx context.Context, image string, _ ...string) error {
	m, err := images.ReadManifest(p.opts.Paths.CacheDir)
	if err != nil {
		return err
	}
	img, ok := findImage(m, image)
	if !ok {
		return fmt.Errorf("image %s is not in the image manifest: run make images", image)
	}
	return p.LoadImageArchive(ctx, img.File)
}

// LoadImageArchive implements support.E2EClusterProviderWithImageLoader: it imports a
// docker-archive tarball into every node's containerd.
func (p *LocalProvider) LoadImageArchive(ctx context.Context, archive string, _ ...string) error {
	if _, err := p.localkube(ctx, nil, "load", archive); err != nil {
		return fmt.Errorf("load %s: %w", archive, err)
	}
	return nil
}

// findImage finds an image of the manifest by any of its tags.
func findImage(m images.Manifest, ref string) (images.Image, bool) {
	for _, img := range m.Images {
		if img.Ref == ref {
			return img, true
		}
		for _, t := range img.Tags {
			if t == ref {
				return img, true
			}
		}
	}
	return images.Image{}, false
}

// localNodeIndex returns K of a local node named nK.
func localNodeIndex(node string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(node, "n"))
	if err != nil || !strings.HasPrefix(node, "n") || n < 1 {
		return 0, fmt.Errorf("%q is not a local node name (n1, n2, ...)", node)
	}
	return n, nil
}

// CutLink implements Provider: `localkube link K down` takes the node's veth down.
func (p *LocalProvider) CutLink(ctx context.Context, node string) error {
	return p.setLink(ctx, node, "down")
}

// RestoreLink implements Provider.
func (p *LocalProvider) RestoreLink(ctx context.Context, node string) error {
	return p.setLink(ctx, node, "up")
}

func (p *LocalProvider) setLink(ctx context.Context, node, state string) error {
	i, err := localNodeIndex(node)
	if err != nil {
		return err
	}
	if _, err := p.localkube(ctx, nil, "link", strconv.Itoa(i), state); err != nil {
		return fmt.Errorf("set link of %s %s: %w", node, state, err)
	}
	return nil
}

// Snapshot returns the host state the local cluster touches (`localkube snapshot`).
func (p *LocalProvider) Snapshot(ctx context.Context) (string, error) {
	out, err := p.localkube(ctx, nil, "snapshot")
	if err != nil {
		return "", fmt.Errorf("host snapshot: %w", err)
	}
	return out, nil
}
