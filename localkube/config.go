// Package localkube runs a real Kubernetes cluster on this machine without Docker: etcd and
// the control plane as host processes, and each worker node in its own network namespace
// with its own containerd, kubelet and kube-proxy. The Makefile, `make demo` and the e2e
// provider all drive it through the localkube command, so bring-up is one piece of code.
//
// Every address it uses is on loopback or on the bridge and pod networks it creates; the
// node namespaces have no default route and the pods get no DNS forwarding, so nothing it
// starts can reach another machine.
package localkube

import (
	"fmt"
	"os"
	"path/filepath"
)

// Versions of what the local cluster is built from. The Kubernetes and etcd binaries come
// from the Go module proxy through hack/k8sbin (etcd's version is the one k8s.io/kubernetes
// requires there); CoreDNS is installed with `go install`.
const (
	KubernetesVersion = "v1.37.2"
	CoreDNSVersion    = "v1.15.0"
	// NetpolVersion is the NetworkPolicy engine's: sigs.k8s.io/kube-network-policies,
	// installed with `go install` (docs/security.md says why this one).
	NetpolVersion = "v0.8.0"
	// PrometheusOperatorVersion is the Prometheus Operator's, built from hack/promop
	// for the e2e monitoring suite (localkube build --monitoring).
	PrometheusOperatorVersion = "v0.85.0"
	// CertManagerVersion is cert-manager's, whose controller, cainjector and webhook
	// hack/certmanager builds for the e2e suites (localkube build --certmanager).
	CertManagerVersion = "v1.21.2"
)

// Network layout. The host holds the bridge and reaches every node and pod through it;
// nodes reach each other's pods directly over the bridge (host-gw routing).
const (
	BridgeName = "vkbr0"
	BridgeIP   = "10.99.0.1"
	// BridgeNetwork holds the host, the nodes and the load balancer's addresses.
	BridgeNetwork  = "10.99.0.0/24"
	bridgePrefix   = "10.99.0"
	bridgeMaskBits = 24
	PodCIDR        = "10.88.0.0/16"
	ServiceCIDR    = "10.0.0.0/24"
	KubeServiceIP  = "10.0.0.1"
	APIServerPort  = 6443
	ClusterDomain  = "cluster.local"
	guardTable     = "vk_guard"
	netnsPrefix    = "vk-"
	vethPrefix     = "vkv"
	cgroupPrefix   = "vk"
	maxNodes       = 50
	StorageClass   = "standard"
	Provisioner    = "localkube.valkey.io/hostpath"
	// RegistryAddress is where a test's image registry listens (on the bridge, which the
	// nodes reach): every node's containerd pulls from it over HTTPS, trusting the
	// cluster's CA, and RegistryCert is its serving certificate. localkube runs no
	// registry itself.
	RegistryAddress = BridgeIP + ":5100"
)

// Config says where the local cluster keeps its files and how many nodes it has.
type Config struct {
	// RepoRoot is the repository checkout; hack/k8sbin is built from there.
	RepoRoot string
	// CacheDir holds binaries, images and run state; git-ignored. Default RepoRoot/.cache.
	CacheDir string
	// Nodes is the number of worker nodes (default 3).
	Nodes int
	// NoNetworkPolicy runs no NetworkPolicy engine (LOCALKUBE_NETWORK_POLICY=off): the
	// cluster then admits every connection, whatever its NetworkPolicies say.
	NoNetworkPolicy bool
	// Log receives progress lines.
	Log func(format string, args ...any)
}

// WithDefaults fills in what was left empty.
func (c Config) WithDefaults() (Config, error) {
	if c.RepoRoot == "" {
		root, err := FindRepoRoot()
		if err != nil {
			return c, err
		}
		c.RepoRoot = root
	}
	if c.CacheDir == "" {
		c.CacheDir = filepath.Join(c.RepoRoot, ".cache")
	}
	if c.Nodes == 0 {
		c.Nodes = 3
	}
	if c.Nodes < 1 || c.Nodes > maxNodes {
		return c, fmt.Errorf("nodes: %d is outside 1..%d", c.Nodes, maxNodes)
	}
	if c.Log == nil {
		c.Log = func(string, ...any) {}
	}
	if os.Getenv("LOCALKUBE_NETWORK_POLICY") == "off" {
		c.NoNetworkPolicy = true
	}
	return c, nil
}

// FindRepoRoot walks up from the working directory to the folder holding go.work.
func FindRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.work above the working directory: run from the repository")
		}
		dir = parent
	}
}

// BinDir holds the Kubernetes and etcd binaries of KubernetesVersion.
func (c Config) BinDir() string { return filepath.Join(c.CacheDir, "k8s", KubernetesVersion, "bin") }

// CoreDNSBinary is the path of the CoreDNS binary.
func (c Config) CoreDNSBinary() string {
	return filepath.Join(c.CacheDir, "coredns", CoreDNSVersion, "coredns")
}

// NetpolBinary is the NetworkPolicy engine's binary, built once per version.
func (c Config) NetpolBinary() string {
	return filepath.Join(c.CacheDir, "netpol", NetpolVersion, "kube-network-policies")
}

// MonitoringDir holds the Prometheus Operator's binaries (bin/) and CRDs (crds/) of
// PrometheusOperatorVersion, which localkube build --monitoring makes.
func (c Config) MonitoringDir() string {
	return filepath.Join(c.CacheDir, "monitoring", PrometheusOperatorVersion)
}

// CertManagerDir holds cert-manager's program (CertManagerBinary) and CRDs (crds/) of
// CertManagerVersion, which localkube build --certmanager makes.
func (c Config) CertManagerDir() string {
	return filepath.Join(c.CacheDir, "certmanager", CertManagerVersion)
}

// CertManagerBinary is cert-manager's program, whose commands controller, cainjector and
// webhook run its three components.
func (c Config) CertManagerBinary() string {
	return filepath.Join(c.CertManagerDir(), "bin", "cert-manager")
}

// AuditDir holds the API server's audit logs, one file per bring-up; it is outside
// RunDir, so the logs of a run's suites stay for the RBAC check (docs/security.md).
func (c Config) AuditDir() string { return filepath.Join(c.CacheDir, "localkube", "audit") }

// RunDir holds everything of a running cluster; local-down deletes it.
func (c Config) RunDir() string { return filepath.Join(c.CacheDir, "localkube", "run") }

// Kubeconfig is the admin kubeconfig of the running cluster.
func (c Config) Kubeconfig() string { return filepath.Join(c.RunDir(), "kubeconfig") }

// CACert is the cluster's CA certificate (PEM), which signs the API server's and the
// registry's serving certificates.
func (c Config) CACert() string { return c.path("pki", "ca.crt") }

// RegistryCert returns the serving certificate and key of a registry at RegistryAddress.
func (c Config) RegistryCert() (cert, key string) {
	return c.path("pki", "registry.crt"), c.path("pki", "registry.key")
}

func (c Config) bin(name string) string { return filepath.Join(c.BinDir(), name) }

func (c Config) path(parts ...string) string {
	return filepath.Join(append([]string{c.RunDir()}, parts...)...)
}

// Node describes one worker node by its index (1-based).
type Node struct{ Index int }

// Name is the Kubernetes node name.
func (n Node) Name() string { return fmt.Sprintf("n%d", n.Index) }

// Netns is the network namespace holding the node.
func (n Node) Netns() string { return netnsPrefix + n.Name() }

// HostVeth is the host end of the node's link to the bridge; cutting it partitions the node.
func (n Node) HostVeth() string { return fmt.Sprintf("%s%d", vethPrefix, n.Index) }

// IP is the node's address on the bridge.
func (n Node) IP() string { return fmt.Sprintf("%s.%d", bridgePrefix, 10+n.Index) }

// PodSubnet is the node's pod network.
func (n Node) PodSubnet() string { return fmt.Sprintf("10.88.%d.0/24", n.Index) }

// CgroupRoot is the node's cgroup parent in every hierarchy.
func (n Node) CgroupRoot() string { return fmt.Sprintf("/%s%s", cgroupPrefix, n.Name()) }

func (c Config) nodes() []Node {
	out := make([]Node, c.Nodes)
	for i := range out {
		out[i] = Node{Index: i + 1}
	}
	return out
}

func (c Config) nodeDir(n Node, parts ...string) string {
	return c.path(append([]string{"nodes", n.Name()}, parts...)...)
}
