package framework

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/support"
	"sigs.k8s.io/e2e-framework/support/kind"

	"github.com/valkey-operator/valkey-operator/images"
	"github.com/valkey-operator/valkey-operator/localkube"
	"github.com/valkey-operator/valkey-operator/localkube/kindnode"
)

// DefaultKindCluster is the name of the kind cluster the suites use.
const DefaultKindCluster = "valkey-e2e"

// KindStockImage is the value of E2E_KIND_IMAGE that selects kind's own node image
// (kindest/node, from its registry: a machine with internet).
const KindStockImage = "stock"

// KindProvider runs the suites on kind. It wraps e2e-framework's kind support and adds
// what the suites expect of any cluster, as the local provider has it:
//
//   - a control plane and Workers() worker nodes, from the project's node image
//     (make kind-image) unless E2E_KIND_IMAGE names another;
//   - a pod network without kind's default CNI (kindnetd is on no registry here): each
//     node gets a ptp CNI configuration for its pod CIDR and routes to the other nodes'
//     pod CIDRs, and the host routes to every node's pod CIDR through the node
//     container's address, so tests reach pod IPs from the host;
//   - CoreDNS that forwards no name outside the cluster (no lookup leaves the machine);
//   - the default StorageClass of the local provider, served by this process from a host
//     folder every worker mounts at the same path, so a volume follows its pod to any
//     node as on the local provider;
//   - the images of the image manifest loaded into every worker;
//   - CutLink taking the node container's host-side link down: its kubelet and pods keep
//     running, cut off from the control plane, the other nodes and the host.
type KindProvider struct {
	*kind.Cluster
	opts        ProviderOptions
	name        string
	kindPath    string
	image       string
	workers     int
	createdHere bool
	routes      []Route
	// stopVolumes stops the volume provisioner (nil when it does not run).
	stopVolumes context.CancelFunc
	volumesDone chan struct{}
	// listNodes returns the cluster's nodes; tests replace it.
	listNodes func(ctx context.Context) ([]corev1.Node, error)
	// clientset talks to the cluster; tests replace it.
	clientset func() (kubernetes.Interface, error)
	// hostVeth returns the host side of a node container's link; tests replace it.
	hostVeth func(ctx context.Context, node string) (string, error)
}

var _ Provider = &KindProvider{}

// NewKindProvider returns the kind provider. E2E_KIND_CLUSTER names the cluster and
// E2E_KIND_IMAGE chooses the node image: unset, the project's (make kind-image);
// "stock", kind's own; anything else, that image.
func NewKindProvider(o ProviderOptions) *KindProvider {
	o = o.withDefaults()
	p := &KindProvider{opts: o, name: o.Getenv("E2E_KIND_CLUSTER"), image: kindImage(o.Getenv("E2E_KIND_IMAGE")), kindPath: "kind", workers: o.Workers}
	if p.name == "" {
		p.name = DefaultKindCluster
	}
	p.Cluster = kind.NewCluster(p.name)
	p.listNodes = p.apiNodes
	p.clientset = p.apiClientset
	p.hostVeth = p.findHostVeth
	return p
}

// kindImage is the node image E2E_KIND_IMAGE selects ("" for kind's own).
func kindImage(v string) string {
	switch v = strings.TrimSpace(v); v {
	case "":
		return kindnode.ImageRef
	case KindStockImage:
		return ""
	}
	return v
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

// volumesDir is the host folder of the cluster's volumes, mounted into every worker.
func (p *KindProvider) volumesDir() string {
	return filepath.Join(p.opts.Paths.CacheDir, "kind", "volumes", p.name)
}

// kindConfig is a kind cluster with one control plane and n workers, without kind's
// default CNI (the provider makes the pod network), kube-proxy in nftables mode, the
// kubelet allowed on cgroup v1 hosts, and volumes mounted at the same path on every
// worker. With the project's node image, kubeadm deploys the CoreDNS it holds.
func kindConfig(workers int, ownImage bool, volumes string) string {
	var b strings.Builder
	b.WriteString(`kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
networking:
  disableDefaultCNI: true
  kubeProxyMode: nftables
kubeadmConfigPatches:
- |
  kind: KubeletConfiguration
  failCgroupV1: false
`)
	if ownImage {
		fmt.Fprintf(&b, "- |\n  kind: ClusterConfiguration\n  dns:\n    imageTag: %s\n", kindnode.CoreDNSImageTag)
	}
	b.WriteString("nodes:\n- role: control-plane\n")
	for i := 0; i < workers; i++ {
		fmt.Fprintf(&b, "- role: worker\n  extraMounts:\n  - hostPath: %s\n    containerPath: %s\n", volumes, volumes)
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
// makes the pod network, CoreDNS, storage and images what the suites expect (see
// KindProvider).
func (p *KindProvider) Create(ctx context.Context, args ...string) (string, error) {
	found, err := p.exists(ctx)
	if err != nil {
		return "", err
	}
	if !found && len(args) == 0 {
		if err := os.MkdirAll(p.volumesDir(), 0o755); err != nil {
			return "", err
		}
		cfgFile := filepath.Join(os.TempDir(), p.name+"-kind.yaml")
		if err := os.WriteFile(cfgFile, []byte(kindConfig(p.workers, p.image == kindnode.ImageRef, p.volumesDir())), 0o644); err != nil {
			return "", fmt.Errorf("write kind config: %w", err)
		}
		args = []string{"--config", cfgFile}
	}
	if !found && p.image != "" {
		args = append(args, "--image", p.image)
	}
	start := time.Now()
	kubeconfig, err := p.Cluster.Create(ctx, args...)
	if err != nil {
		return "", err
	}
	p.createdHere = !found
	fmt.Fprintf(p.opts.Progress, "e2e: kind cluster %s %s after %s\n", p.name, map[bool]string{true: "created", false: "found"}[!found], time.Since(start).Round(100*time.Millisecond))
	if err := p.prepare(ctx); err != nil {
		return "", err
	}
	return kubeconfig, nil
}

// prepare gives a kind cluster what the suites expect: CoreDNS without forwarding
// (before any CoreDNS pod can start: they wait for the pod network), the pod network,
// the host routes, the volume provisioner and the images.
func (p *KindProvider) prepare(ctx context.Context) error {
	start := time.Now()
	cs, err := p.clientset()
	if err != nil {
		return err
	}
	if err := noDNSForwarding(ctx, cs); err != nil {
		return err
	}
	nodes, err := p.listNodes(ctx)
	if err != nil {
		return fmt.Errorf("list kind nodes: %w", err)
	}
	if err := p.podNetwork(ctx, nodes); err != nil {
		return err
	}
	if err := p.addPodRoutes(ctx, nodes); err != nil {
		return err
	}
	if err := p.startVolumes(ctx, cs); err != nil {
		return err
	}
	if err := p.loadManifestImages(ctx, nodes); err != nil {
		return err
	}
	fmt.Fprintf(p.opts.Progress, "e2e: kind cluster %s prepared (pod network, DNS, volumes, images) in %s\n", p.name, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// apiClientset is a clientset of the kind cluster.
func (p *KindProvider) apiClientset() (kubernetes.Interface, error) {
	rc := p.Cluster.KubernetesRestConfig()
	if rc == nil {
		return nil, fmt.Errorf("kind cluster %s: no client configuration", p.name)
	}
	return kubernetes.NewForConfig(rc)
}

// noDNSForwarding removes the forward plugin from CoreDNS's Corefile (kubeadm's
// forwards every other name to the node's resolver), so that cluster names resolve and
// nothing else does, as on the local provider.
func noDNSForwarding(ctx context.Context, cs kubernetes.Interface) error {
	cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("CoreDNS configuration: %w", err)
	}
	was := cm.Data["Corefile"]
	now := WithoutForward(was)
	if now == was {
		return nil
	}
	cm.Data["Corefile"] = now
	if _, err := cs.CoreV1().ConfigMaps("kube-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("CoreDNS configuration: %w", err)
	}
	return nil
}

// WithoutForward returns a Corefile without its forward directives (a one-line one, or
// one with a block).
func WithoutForward(corefile string) string {
	var out []string
	depth := 0 // inside a forward block: its nesting
	for _, l := range strings.SplitAfter(corefile, "\n") {
		t := strings.TrimSpace(l)
		if depth > 0 {
			depth += strings.Count(t, "{") - strings.Count(t, "}")
			continue
		}
		if t == "forward" || strings.HasPrefix(t, "forward ") {
			depth = strings.Count(t, "{") - strings.Count(t, "}")
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "")
}

// cniConfig is a node's CNI configuration: point-to-point links to the pods (the plugin
// kind's nodes all have), addresses from the node's pod CIDR, host ports.
func cniConfig(cidr string) string {
	return fmt.Sprintf(`{"cniVersion":"1.0.0","name":"valkey-e2e","plugins":[`+
		`{"type":"ptp","ipMasq":false,"ipam":{"type":"host-local","ranges":[[{"subnet":%q}]],"routes":[{"dst":"0.0.0.0/0"}]}},`+
		`{"type":"portmap","capabilities":{"portMappings":true}}]}`, cidr)
}

// podNetwork configures every node: forwarding on, its CNI configuration, and a route
// to each other node's pod CIDR through that node's address.
func (p *KindProvider) podNetwork(ctx context.Context, nodes []corev1.Node) error {
	routes, err := PodRoutes(nodes)
	if err != nil {
		return err
	}
	for _, n := range routes {
		cmds := []Command{
			{Name: "docker", Args: []string{"exec", n.Node, "sysctl", "-qw", "net.ipv4.ip_forward=1"}},
			{Name: "docker", Args: []string{"exec", "-i", n.Node, "sh", "-c", "mkdir -p /etc/cni/net.d && cat >/etc/cni/net.d/10-valkey-e2e.conflist"}, Stdin: cniConfig(n.CIDR)},
		}
		for _, o := range routes {
			if o.Node != n.Node {
				cmds = append(cmds, Command{Name: "docker", Args: append([]string{"exec", n.Node}, o.addCommand().fullArgs()...)})
			}
		}
		for _, c := range cmds {
			if _, err := p.opts.Runner.Run(ctx, c); err != nil {
				return fmt.Errorf("pod network of %s: %w", n.Node, err)
			}
		}
	}
	return nil
}

// startVolumes serves the default StorageClass from the cluster's volumes folder (a
// StorageClass of that name from another provisioner, kind's own, is replaced).
func (p *KindProvider) startVolumes(ctx context.Context, cs kubernetes.Interface) error {
	if p.stopVolumes != nil {
		return nil
	}
	sc, err := cs.StorageV1().StorageClasses().Get(ctx, localkube.StorageClass, metav1.GetOptions{})
	switch {
	case err == nil && sc.Provisioner != localkube.Provisioner:
		if err := cs.StorageV1().StorageClasses().Delete(ctx, sc.Name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("replace StorageClass %s: %w", sc.Name, err)
		}
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("StorageClass %s: %w", localkube.StorageClass, err)
	}
	vctx, cancel := context.WithCancel(context.Background())
	p.stopVolumes, p.volumesDone = cancel, make(chan struct{})
	go func() {
		defer close(p.volumesDone)
		if err := localkube.ServeVolumes(vctx, cs, p.volumesDir()); err != nil && vctx.Err() == nil {
			fmt.Fprintf(p.opts.Progress, "e2e: kind volumes: %v\n", err)
		}
	}()
	return nil
}

// stopVolumeServer stops the provisioner startVolumes started.
func (p *KindProvider) stopVolumeServer() {
	if p.stopVolumes == nil {
		return
	}
	p.stopVolumes()
	<-p.volumesDone
	p.stopVolumes = nil
}

// CreateWithConfig implements support.E2EClusterProvider.
func (p *KindProvider) CreateWithConfig(ctx context.Context, configFile string) (string, error) {
	if configFile == "" {
		return p.Create(ctx)
	}
	return p.Create(ctx, "--config", configFile)
}

// loadManifestImages loads every image tarball of the manifest into the workers (the
// control plane runs no test pods).
func (p *KindProvider) loadManifestImages(ctx context.Context, nodes []corev1.Node) error {
	m, err := images.ReadManifest(p.opts.Paths.CacheDir)
	if err != nil {
		return err
	}
	var workers []string
	for i := range nodes {
		if IsWorker(&nodes[i]) {
			workers = append(workers, nodes[i].Name)
		}
	}
	sort.Strings(workers)
	for _, f := range m.Files() {
		if err := p.LoadImageArchive(ctx, f, "--nodes", strings.Join(workers, ",")); err != nil {
			return err
		}
	}
	return nil
}

// LoadImageArchive implements support.E2EClusterProviderWithImageLoader with
// `kind load image-archive`.
func (p *KindProvider) LoadImageArchive(ctx context.Context, archive string, args ...string) error {
	_, err := p.opts.Runner.Run(ctx, Command{Name: p.kindPath, Args: append([]string{"load", "image-archive", "--name", p.name, archive}, args...)})
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

// fullArgs is the command line as arguments, the program first.
func (c Command) fullArgs() []string { return append([]string{c.Name}, c.Args...) }

// delCommand removes r.
func (r Route) delCommand() Command {
	return Command{Name: "ip", Args: []string{"route", "del", r.CIDR, "via", r.Via}}
}

// apiNodes lists the nodes through the cluster's API.
func (p *KindProvider) apiNodes(ctx context.Context) ([]corev1.Node, error) {
	cs, err := p.clientset()
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
func (p *KindProvider) addPodRoutes(ctx context.Context, nodes []corev1.Node) error {
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
// every worker Ready, the default service account and StorageClass present, and
// kube-proxy and CoreDNS serving (Services and cluster names work from the first test).
func (p *KindProvider) WaitForControlPlane(ctx context.Context, c klient.Client) error {
	if err := p.Cluster.WaitForControlPlane(ctx, c); err != nil {
		return err
	}
	if err := waitClusterUsable(ctx, c, p.workers, 3*time.Minute); err != nil {
		return err
	}
	return Until(ctx, 3*time.Minute, "kube-proxy and CoreDNS to serve", func(ctx context.Context) (bool, string, error) {
		var ds appsv1.DaemonSet
		if err := c.Resources().Get(ctx, "kube-proxy", "kube-system", &ds); err != nil {
			return false, "", err
		}
		if ds.Status.DesiredNumberScheduled == 0 || ds.Status.NumberReady < ds.Status.DesiredNumberScheduled {
			return false, fmt.Sprintf("kube-proxy ready on %d of %d nodes", ds.Status.NumberReady, ds.Status.DesiredNumberScheduled), nil
		}
		var dns appsv1.Deployment
		if err := c.Resources().Get(ctx, "coredns", "kube-system", &dns); err != nil {
			return false, "", err
		}
		if dns.Status.ReadyReplicas == 0 {
			return false, "no CoreDNS replica ready", nil
		}
		return true, "", nil
	})
}

// Destroy implements support.E2EClusterProvider: it stops the volume provisioner,
// removes the pod routes, and deletes the cluster and its volumes only when Create made
// it and Keep is not set.
func (p *KindProvider) Destroy(ctx context.Context) error {
	p.stopVolumeServer()
	err := p.removePodRoutes(ctx)
	if !p.createdHere || p.opts.Keep {
		return err
	}
	if derr := p.Cluster.Destroy(ctx); derr != nil {
		return fmt.Errorf("delete kind cluster %s: %w", p.name, derr)
	}
	if rerr := os.RemoveAll(p.volumesDir()); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// CutLink implements Provider: it takes the host side of the node container's link
// down (as the local provider takes a node's veth down). The node's kubelet and pods
// keep running and reach each other; the control plane, the other nodes and the host
// cannot reach them.
func (p *KindProvider) CutLink(ctx context.Context, node string) error {
	return p.setLink(ctx, node, "down")
}

// RestoreLink implements Provider.
func (p *KindProvider) RestoreLink(ctx context.Context, node string) error {
	return p.setLink(ctx, node, "up")
}

func (p *KindProvider) setLink(ctx context.Context, node, state string) error {
	veth, err := p.hostVeth(ctx, node)
	if err != nil {
		return err
	}
	if _, err := p.opts.Runner.Run(ctx, Command{Name: "ip", Args: []string{"link", "set", veth, state}}); err != nil {
		return fmt.Errorf("set the link of %s %s: %w", node, state, err)
	}
	return nil
}

// findHostVeth returns the host interface whose peer is the node container's eth0.
func (p *KindProvider) findHostVeth(ctx context.Context, node string) (string, error) {
	out, err := p.opts.Runner.Run(ctx, Command{Name: "docker", Args: []string{"exec", node, "cat", "/sys/class/net/eth0/iflink"}})
	if err != nil {
		return "", fmt.Errorf("link of %s: %w", node, err)
	}
	idx, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return "", fmt.Errorf("link of %s: iflink %q", node, out)
	}
	ifc, err := net.InterfaceByIndex(idx)
	if err != nil {
		return "", fmt.Errorf("link of %s: host interface %d: %w", node, idx, err)
	}
	return ifc.Name, nil
}
