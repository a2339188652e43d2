// Package kindnode builds a kind node image for the local Kubernetes' version
// (KubernetesVersion) without a registry and without `docker build`, and loads it into
// the local Docker engine.
//
// # What kind needs of a node image
//
// kind (sigs.k8s.io/kind, images/base and pkg/cluster in its module) runs a node image
// privileged, with a private cgroup namespace, tmpfs on /run and /tmp and a volume on
// /var, and takes the node as started once its log shows systemd reaching the multi-user
// target. It then reads /kind/version (one line: the Kubernetes version), writes
// /kind/kubeadm.conf and runs kubeadm init or join in the node, which needs systemd to
// run containerd (with the CRI on /run/containerd/containerd.sock) and the kubelet
// (enabled, started by kubeadm once /var/lib/kubelet/config.yaml exists, flags from
// /var/lib/kubelet/kubeadm-flags.env), and the control-plane images already in
// containerd's k8s.io namespace. The storage step applies /kind/manifests/default-storage.yaml.
//
// # How this image is made
//
// Three layers, each cached under CacheDir/kind with the hash of its inputs:
//
//   - base: a minbase debootstrap of Debian 12 with systemd, iptables, nftables, iproute2,
//     conntrack, kmod and libseccomp2; systemd's units pruned to what a node runs.
//   - kube: containerd, its shim, ctr, runc, crictl and the CNI plugins built from the Go
//     module proxy (tools.go), kubeadm, kubelet and kubectl v1.37.2 (built with version
//     ldflags from hack/k8sbin), and the node's own files (files/: the entrypoint, the
//     systemd units, containerd's configuration, registries pointed nowhere).
//   - preload: containerd's root with the control-plane images imported: kube-apiserver,
//     kube-controller-manager, kube-scheduler, kube-proxy (with nft and iptables-nft of
//     the base layer), etcd, CoreDNS and pause, each a one-layer image of static
//     binaries (images.WriteFileImage), imported by running the built containerd on this
//     machine against the layer's directory.
//
// The image is written as a docker-archive stream of uncompressed layers and piped into
// `docker load` only when the engine lacks its ID; the engine skips layers it has.
package kindnode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/valkey-operator/valkey-operator/localkube"
)

// Versions of what the node image holds.
const (
	KubernetesVersion = localkube.KubernetesVersion
	ContainerdVersion = "v2.3.4"
	RuncVersion       = "v1.4.3"
	CrictlVersion     = "v1.36.0"
	CNIPluginsVersion = "v1.9.1"
	// EtcdImageTag is kubeadm v1.37's default etcd image tag; the project's etcd is 3.7.0.
	EtcdImageTag = "3.7.0-0"
	// CoreDNSImageTag is the project's CoreDNS; kubeadm is told to use it
	// (ClusterConfiguration dns.imageTag), as its own default is v1.14.6.
	CoreDNSImageTag = localkube.CoreDNSVersion
	// PauseImage is the sandbox image (containerd's configuration names it).
	PauseImage = "registry.k8s.io/pause:3.10"
)

// ImageRef is the node image's reference in the Docker engine.
const ImageRef = "docker.io/valkey-operator/kind-node:" + KubernetesVersion

// builderVersion is part of every layer's inputs: bump it when the layout code changes.
const builderVersion = "1"

// Config configures Build.
type Config struct {
	// CacheDir is the project's cache; the image's parts go under CacheDir/kind, the
	// Kubernetes binaries come from CacheDir/k8s and the pause image from CacheDir/images.
	CacheDir string
	// RepoRoot is the repository (hack/k8sbin builds kubeadm).
	RepoRoot string
	// Mirror is the Debian mirror of the base layer (default http://deb.debian.org/debian).
	Mirror string
	// Log receives progress lines (default: none).
	Log func(format string, a ...any)
}

func (c Config) withDefaults() (Config, error) {
	if c.CacheDir == "" || c.RepoRoot == "" {
		return c, fmt.Errorf("kind node image: CacheDir and RepoRoot must be set")
	}
	if c.Mirror == "" {
		c.Mirror = "http://deb.debian.org/debian"
	}
	if c.Log == nil {
		c.Log = func(string, ...any) {}
	}
	return c, nil
}

// dir is CacheDir/kind.
func (c Config) dir(parts ...string) string {
	return filepath.Join(append([]string{c.CacheDir, "kind"}, parts...)...)
}

// Image is a built node image.
type Image struct {
	Ref string `json:"ref"`
	// ID is the image ID (the digest of its configuration), as `docker image inspect` shows it.
	ID string `json:"id"`
	// Layers are the layer files, bottom first.
	Layers []Layer `json:"layers"`
}

// Build builds the node image's parts that are missing or stale and returns the image.
func Build(ctx context.Context, c Config) (Image, error) {
	c, err := c.withDefaults()
	if err != nil {
		return Image{}, err
	}
	if err := os.MkdirAll(c.dir(), 0o755); err != nil {
		return Image{}, err
	}
	start := time.Now()
	b := &builder{c: c, lk: localkube.Config{CacheDir: c.CacheDir, RepoRoot: c.RepoRoot}}
	steps := []struct {
		name string
		run  func(context.Context) error
	}{
		{"tools", b.buildTools},
		{"base layer", b.buildBase},
		{"control-plane images", b.buildControlPlaneImages},
		{"preload layer", b.buildPreload},
		{"kube layer", b.buildKube},
	}
	for _, s := range steps {
		t := time.Now()
		if err := s.run(ctx); err != nil {
			return Image{}, fmt.Errorf("kind node image: %s: %w", s.name, err)
		}
		c.Log("kind node image: %s ready (%s)", s.name, time.Since(t).Round(100*time.Millisecond))
	}
	img, err := b.image()
	if err != nil {
		return Image{}, err
	}
	c.Log("kind node image %s (%s) built in %s", img.Ref, img.ID, time.Since(start).Round(100*time.Millisecond))
	return img, nil
}

// builder holds one Build's state.
type builder struct {
	c  Config
	lk localkube.Config
	// layers built so far, bottom first.
	base, kube, preload Layer
	// cpImages are the control-plane image tarballs, in import order.
	cpImages []cpImage
}
