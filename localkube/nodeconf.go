package localkube

import (
	"fmt"
	"os"
	"path/filepath"
)

// hostPathsPerNode are host paths that containerd, kubelet or CNI use whatever their
// configuration says. Each node bind-mounts its own folder over them inside its private
// mount namespace, so the nodes do not share (and the host never sees) their contents.
var hostPathsPerNode = []string{"/var/lib/kubelet", "/var/log/containers", "/var/log/pods", "/var/lib/cni", "/run/containerd"}

// resolvConf is given to the node processes and to pods that do not use cluster DNS:
// it points at the node namespace's own loopback, where nothing answers, so no name
// lookup can leave the machine.
const resolvConf = "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"

func (c Config) containerdConfig(n Node) string {
	d := func(p ...string) string { return c.nodeDir(n, p...) }
	return fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_cdi = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %q
`, d("containerd", "root"), d("containerd", "state"), c.containerdSocket(n), d("containerd", "opt"),
		d("containerd", "runc"), d("cni", "net.d"), d("containerd", "certs.d"))
}

// registryHosts is the containerd hosts.toml of RegistryAddress: HTTPS, the cluster's CA.
func (c Config) registryHosts() string {
	return fmt.Sprintf(`server = "https://%[1]s"

[host."https://%[1]s"]
  capabilities = ["pull", "resolve"]
  ca = %[2]q
`, RegistryAddress, c.CACert())
}

func (c Config) containerdSocket(n Node) string { return c.nodeDir(n, "containerd.sock") }

func (c Config) cniConfig(n Node) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "localkube",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": %q
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, n.PodSubnet(), c.nodeDir(n, "cni", "ipam"))
}

// Node heartbeat timing: a node that stops renewing its lease is NotReady after
// nodeMonitorGracePeriod. Shorter than Kubernetes' defaults (40 s lease, 50 s grace) so
// tests that cut a node's link see it within seconds, as a cloud's fast profile would.
const (
	nodeLeaseSeconds       = 8
	nodeStatusUpdate       = "2s"
	nodeMonitorPeriod      = "2s"
	nodeMonitorGracePeriod = "16s"
)

func (c Config) kubeletConfig(n Node) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %q}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
cgroupRoot: %s
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://%s
clusterDNS: [%s]
clusterDomain: %s
resolvConf: %q
podLogsDir: %q
volumePluginDir: %q
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {"memory.available": "100Mi", "nodefs.available": "1%%", "imagefs.available": "1%%"}
serializeImagePulls: false
nodeLeaseDurationSeconds: %d
nodeStatusUpdateFrequency: %s
nodeStatusReportFrequency: %s
maxPods: 110
`, n.IP(), c.path("pki", "ca.crt"), n.CgroupRoot(), c.containerdSocket(n), BridgeIP, ClusterDomain,
		c.path("resolv.conf"), c.nodeDir(n, "pod-logs"), c.nodeDir(n, "volume-plugins"),
		nodeLeaseSeconds, nodeStatusUpdate, nodeStatusUpdate)
}

func (c Config) kubeProxyConfig(n Node) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: %q}
mode: iptables
clusterCIDR: %s
hostnameOverride: %s
bindAddress: %s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: [%s/32]
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false}
`, c.path("kubeconfigs", "kube-proxy.kubeconfig"), PodCIDR, n.Name(), n.IP(), n.IP())
}

// writeNodeFiles writes every configuration file of node n.
func (c Config) writeNodeFiles(n Node) error {
	for _, dir := range []string{"cni/net.d", "cni/ipam", "containerd", "containerd/certs.d/" + RegistryAddress, "logs", "pod-logs", "volume-plugins", "kubelet", "certs"} {
		if err := os.MkdirAll(c.nodeDir(n, dir), 0o755); err != nil {
			return err
		}
	}
	for _, p := range hostPathsPerNode {
		if err := os.MkdirAll(c.nodeDir(n, "host", filepath.Base(p)), 0o755); err != nil {
			return err
		}
	}
	files := map[string]string{
		c.nodeDir(n, "containerd.toml"):                                      c.containerdConfig(n),
		c.nodeDir(n, "cni", "net.d", "10-vk.conflist"):                       c.cniConfig(n),
		c.nodeDir(n, "kubelet.yaml"):                                         c.kubeletConfig(n),
		c.nodeDir(n, "kube-proxy.yaml"):                                      c.kubeProxyConfig(n),
		c.nodeDir(n, "containerd", "certs.d", RegistryAddress, "hosts.toml"): c.registryHosts(),
	}
	for path, body := range files {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}
