package framework

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/support"
	"sigs.k8s.io/e2e-framework/support/kind"

	"github.com/valkey-operator/valkey-operator/localkube/images"
)

// DefaultKindCluster is the name of the kind cluster the suites use.
const DefaultKindCluster = "valkey-e2e"

// KindProvider runs the suites on kind. It wraps e2e-framework's kind support and adds
// what the suites expect of any cluster: a control plane and Workers() worker nodes, the
// images of the image manifest loaded into every node, and host routes to each node's
// pod network through the node container's address, so tests reach pod IPs from the
// host as they do on the local provider.
type KindProvider struct {
	*kind.Cluster
	opts        ProviderOptions
	name        string
	kindPath    string
	image       string
	workers     int
	createdHere bool
	routes      []Route
	// listNodes returns the cluster's nodes; tests replace it.
	listNodes func(ctx context.Context) ([]corev1.Node, error)
}

var _ Provider = &KindProvider{}

// NewKindProvider returns the kind provider. E2E_KIND_CLUSTER names the cluster and
// E2E_KIND_IMAGE chooses the node image.
func NewKindProvider(o ProviderOptions) *KindProvider {
	o = o.withDefaults()
	p := &KindProvider{opts: o, name: o.Getenv("E2E_KIND_CLUSTER"), image: o.Getenv("E2E_KIND_IMAGE"), kindPath: "kind", workers: o.Workers}
	if p.name == "" {
		p.name = DefaultKindCluster
	}
	p.Cluster = kind.NewCluster(p.name)
	p.listNodes = p.apiNodes
	return p
}

// ProviderName implements Provider.
func (p *KindProvider) ProviderName() ProviderName { return ProviderKind }

// Workers implements Provider.
func (p *KindProvider) Workers() int { return p.workers }

// SetDefaults implements support.E2EClusterProvider.
func (p *KindProvider) SetDefaults() support.E2EClusterProvider {
	p.Cluster.SetDefaults()
	return p
}

// WithName implements support.E2EClusterProvider.
func (p *KindProvider) WithName(name string) support.E2EClusterProvider {
	p.name = name
	p.Cluster.WithName(name)
	return p
}

// WithVersion implements support.E2EClusterProvider (the kind version to use).
func (p *KindProvider) WithVersion(v string) support.E2EClusterProvider {
	p.Cluster.WithVersion(v)
	return p
}

// WithPath implements support.E2EClusterProvider (the kind binary).
func (p *KindProvider) WithPath(path string) support.E2EClusterProvider {
	p.kindPath = path
	p.Cluster.WithPath(path)
	return p
}

// WithOpts implements support.E2EClusterProvider.
func (p *KindProvider) WithOpts(opts ...support.ClusterOpts) support.E2EClusterProvider {
	for _, o := range opts {
		o(p)
		o(p.Cluster)
	}
	return p
}

// kindConfig is a kind cluster with one control plane and n workers.
func kindConfig(workers int) string {
	var b strings.Builder
	b.WriteString("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- role: control-plane\n")
	for i := 0; i < workers; i++ {
		b.WriteString("- role: worker\n")
	}
	return b.String()
}

// exists reports whether the kind cluster is there already.
func (p *KindProvider) exists(ctx context.Context) (bool, error) {
	out, err := p.opts.Runner.Run(ctx, Command{Name: p.kindPath, Args: []string{"get", "clusters"}})
	if err != nil {
		return false, fmt.Errorf("list kind clusters: %w", err)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) == p.name {
			return true, nil
		}
	}
	return false, nil
}

// Create implements support.E2EClusterProvider: it reuses the named kind cluster or
// creates one with Workers() workers (args replace the generated configuration), then
// loads the manifest's images and adds the pod routes.
func (p *KindProvider) Create(ctx context.Context, args ...string) (string, error) {
	found, err := p.exists(ctx)
	if err != nil {
		return "", err
	}
	if !found && len(args) == 0 {
		cfgFile := filepath.Join(os.TempDir(), p.name+"-kind.yaml")
		if err := os.WriteFile(cfgFile, []byte(kindConfig(p.workers)), 0o644); err != nil {
			return "", fmt.Errorf("write kind config: %w", err)
		}
		args = []string{"--config", cfgFile}
	}
	if !found && p.image != "" {
		args = append(args, "--image", p.image)
	}
	kubeconfig, err := p.Cluster.Create(ctx, args...)
	if err != nil {
		return "", err
	}
	p.createdHere = !found
	if err := p.loadManifestImages(ctx); err != nil {
		return "", err
	}
	if err := p.addPodRoutes(ctx); err != nil {
		return "", err
	}
	return kubeconfig, nil
}

// CreateWithConfig implements support.E2EClusterProvider.
func (p *KindProvider) CreateWithConfig(ctx context.Context, configFile string) (string, error) {
	if configFile == "" {
		return p.Create(ctx)
	}
	return p.Create(ctx, "--config", configFile)
}

// loadManifestImages loads every image tarball of the manifest into the kind nodes.
func (p *KindProvider) loadManifestImages(ctx context.Context) error {
	m, err := images.ReadManifest(p.opts.Paths.CacheDir)
	if err != nil {
		return err
	}
	for _, f := range m.Files() {
		if err := p.LoadImageArchive(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// LoadImageArchive implements support.E2EClusterProviderWithImageLoader with
// `kind load image-archive`.
func (p *KindProvider) LoadImageArchive(ctx context.Context, archive string, _ ...string) error {
	_, err := p.opts.Runner.Run(ctx, Command{Name: p.kindPath, Args: []string{"load", "image-archive", "--name", p.name, archive}})
	if err != nil {
		return fmt.Errorf("kind load %s: %w", archive, err)
	}
	return nil
}

// LoadImage implements support.E2EClusterProviderWithImageLoader: an image of the
// manifest is loaded from its tarball, any other from the Docker daemon.
func (p *KindProvider) LoadImage(ctx context.Context, image string, _ ...string) error {
	if m, err := images.ReadManifest(p.opts.Paths.CacheDir); err == nil {
		if img, ok := findImage(m, image); ok {
			return p.LoadImageArchive(ctx, img.File)
		}
	}
	_, err := p.opts.Runner.Run(ctx, Command{Name: p.kindPath, Args: []string{"load", "docker-image", "--name", p.name, image}})
	if err != nil {
		return fmt.Errorf("kind load %s: %w", image, err)
	}
	return nil
}

// Route sends a node's pod network through the node's address.
type Route struct {
	Node string
	CIDR string
	Via  string
}

// PodRoutes computes the host routes to every node's IPv4 pod networks through the
// node's IPv4 InternalIP, sorted by node name. A node without either is an error.
func PodRoutes(nodes []corev1.Node) ([]Route, error) {
	var out []Route
	for _, n := range nodes {
		via := ""
		for _, a := range n.Status.Addresses {
			if ip := net.ParseIP(a.Address); a.Type == corev1.NodeInternalIP && ip != nil && ip.To4() != nil {
				via = a.Address
				break
			}
		}
		if via == "" {
			return nil, fmt.Errorf("node %s has no IPv4 InternalIP", n.Name)
		}
		cidrs := n.Spec.PodCIDRs
		if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
			cidrs = []string{n.Spec.PodCIDR}
		}
		found := false
		for _, c := range cidrs {
			if ip, _, err := net.ParseCIDR(c); err == nil && ip.To4() != nil {
				out = append(out, Route{Node: n.Name, CIDR: c, Via: via})
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("node %s has no IPv4 pod CIDR", n.Name)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out, nil
}

// addCommand is the command that installs r (replacing a stale one).
func (r Route) addCommand() Command {
	return Command{Name: "ip", Args: []string{"route", "replace", r.CIDR, "via", r.Via}}
}

// delCommand removes r.
func (r Route) delCommand() Command {
	return Command{Name: "ip", Args: []string{"route", "del", r.CIDR, "via", r.Via}}
}

// apiNodes lists the nodes through the cluster's API.
func (p *KindProvider) apiNodes(ctx context.Context) ([]corev1.Node, error) {
	rc := p.Cluster.KubernetesRestConfig()
	if rc == nil {
		return nil, fmt.Errorf("kind cluster %s: no client configuration", p.name)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	var nodes *corev1.NodeList
	// kind assigns pod CIDRs as nodes join; wait until every node has one.
	err = Until(ctx, 2*time.Minute, "pod CIDRs on every kind node", func(ctx context.Context) (bool, string, error) {
		nodes, err = cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		for _, n := range nodes.Items {
			if n.Spec.PodCIDR == "" {
				return false, "node " + n.Name + " has no pod CIDR yet", nil
			}
		}
		return true, "", nil
	})
	if err != nil {
		return nil, err
	}
	return nodes.Items, nil
}

// addPodRoutes installs a host route to each node's pod network.
func (p *KindProvider) addPodRoutes(ctx context.Context) error {
	nodes, err := p.listNodes(ctx)
	if err != nil {
		return fmt.Errorf("list kind nodes: %w", err)
	}
	routes, err := PodRoutes(nodes)
	if err != nil {
		return err
	}
	for _, r := range routes {
		if _, err := p.opts.Runner.Run(ctx, r.addCommand()); err != nil {
			return fmt.Errorf("route to the pods of %s: %w", r.Node, err)
		}
		p.routes = append(p.routes, r)
	}
	return nil
}

// removePodRoutes removes the routes addPodRoutes installed.
func (p *KindProvider) removePodRoutes(ctx context.Context) error {
	var errs []string
	for _, r := range p.routes {
		if _, err := p.opts.Runner.Run(ctx, r.delCommand()); err != nil {
			errs = append(errs, err.Error())
		}
	}
	p.routes = nil
	if len(errs) > 0 {
		return fmt.Errorf("remove pod routes: %s", strings.Join(errs, "; "))
	}
	return nil
}

// WaitForControlPlane implements support.E2EClusterProvider: kind's own check, then
// every worker Ready, the default service account and StorageClass present.
func (p *KindProvider) WaitForControlPlane(ctx context.Context, c klient.Client) error {
	if err := p.Cluster.WaitForControlPlane(ctx, c); err != nil {
		return err
	}
	return waitClusterUsable(ctx, c, p.workers, 3*time.Minute)
}

// Destroy implements support.E2EClusterProvider: it removes the pod routes, and deletes
// the cluster only when Create made it and Keep is not set.
func (p *KindProvider) Destroy(ctx context.Context) error {
	err := p.removePodRoutes(ctx)
	if !p.createdHere || p.opts.Keep {
		return err
	}
	if derr := p.Cluster.Destroy(ctx); derr != nil {
		return fmt.Errorf("delete kind cluster %s: %w", p.name, derr)
	}
	return err
}

// CutLink implements Provider. A kind node is a container: pausing it freezes its
// kubelet and its pods, which the control plane and clients see as a partition.
func (p *KindProvider) CutLink(ctx context.Context, node string) error {
	return p.docker(ctx, "pause", node)
}

// RestoreLink implements Provider.
func (p *KindProvider) RestoreLink(ctx context.Context, node string) error {
	return p.docker(ctx, "unpause", node)
}

func (p *KindProvider) docker(ctx context.Context, verb, node string) error {
	if _, err := p.opts.Runner.Run(ctx, Command{Name: "docker", Args: []string{verb, node}}); err != nil {
		return fmt.Errorf("docker %s %s: %w", verb, node, err)
	}
	return nil
}
