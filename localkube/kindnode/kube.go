package kindnode

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/valkey-operator/valkey-operator/localkube"
)

// files are the node's own files (see files/*: each says what it is for).
//
//go:embed files
var files embed.FS

// nodeFiles maps the embedded files to their place in the image.
var nodeFiles = []struct {
	src, dst string
	mode     fs.FileMode
}{
	{"entrypoint.sh", "/usr/local/bin/entrypoint", 0o755},
	{"kubelet-cgroups.sh", "/kind/bin/kubelet-cgroups.sh", 0o755},
	{"containerd.toml", "/etc/containerd/config.toml", 0o644},
	{"hosts.toml", "/etc/containerd/certs.d/_default/hosts.toml", 0o644},
	{"crictl.yaml", "/etc/crictl.yaml", 0o644},
	{"containerd.service", "/etc/systemd/system/containerd.service", 0o644},
	{"kubelet.service", "/etc/systemd/system/kubelet.service", 0o644},
	{"kubelet.slice", "/etc/systemd/system/kubelet.slice", 0o644},
	{"10-node.conf", "/etc/systemd/system/kubelet.service.d/10-node.conf", 0o644},
	{"sysctl.conf", "/etc/sysctl.d/90-kind-node.conf", 0o644},
	{"journald.conf", "/etc/systemd/journald.conf.d/90-kind-node.conf", 0o644},
}

// nodeBinaries maps the built programs to their place in the image.
func (b *builder) nodeBinaries() map[string]string {
	m := map[string]string{
		"/usr/local/sbin/runc": b.toolBin("runc"),
		"/usr/bin/kubeadm":     b.toolBin("kubeadm"),
		"/usr/bin/kubelet":     filepath.Join(b.lk.BinDir(), "kubelet"),
		"/usr/bin/kubectl":     filepath.Join(b.lk.BinDir(), "kubectl"),
	}
	for _, n := range []string{"containerd", "containerd-shim-runc-v2", "ctr", "crictl"} {
		m["/usr/local/bin/"+n] = b.toolBin(n)
	}
	for _, n := range []string{"host-local", "loopback", "ptp", "portmap"} {
		m["/opt/cni/bin/"+n] = b.toolBin(n)
	}
	return m
}

// StorageClassManifest is the default StorageClass kind applies at creation
// (/kind/manifests/default-storage.yaml): the local provisioner's, whose volumes the e2e
// provider serves from a host folder every node mounts.
func StorageClassManifest() string {
	return fmt.Sprintf(`apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: %s
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: %s
reclaimPolicy: Delete
volumeBindingMode: Immediate
allowVolumeExpansion: true
`, localkube.StorageClass, localkube.Provisioner)
}

// baseSpec returns the CRI's base OCI spec: containerd's default without its rlimits, so
// that containers inherit containerd's (unlimited open files) as on other nodes.
func (b *builder) baseSpec(ctx context.Context) ([]byte, error) {
	out, err := exec.CommandContext(ctx, b.toolBin("ctr"), "oci", "spec").Output()
	if err != nil {
		return nil, fmt.Errorf("ctr oci spec: %w", err)
	}
	var spec map[string]any
	if err := json.Unmarshal(out, &spec); err != nil {
		return nil, fmt.Errorf("ctr oci spec: %w", err)
	}
	if p, ok := spec["process"].(map[string]any); ok {
		delete(p, "rlimits")
	}
	data, err := json.MarshalIndent(spec, "", "  ")
	return append(data, '\n'), err
}

// kubeEntries lists the kube layer.
func (b *builder) kubeEntries(ctx context.Context) ([]entry, error) {
	var es []entry
	for dst, src := range b.nodeBinaries() {
		es = append(es, entry{path: dst, src: src, mode: 0o755})
	}
	for _, f := range nodeFiles {
		data, err := files.ReadFile("files/" + f.src)
		if err != nil {
			return nil, err
		}
		es = append(es, entry{path: f.dst, data: data, mode: f.mode})
	}
	spec, err := b.baseSpec(ctx)
	if err != nil {
		return nil, err
	}
	var preloaded []string
	for _, img := range b.cpImages {
		preloaded = append(preloaded, img.Ref)
	}
	es = append(es,
		entry{path: "/etc/containerd/cri-base.json", data: spec, mode: 0o644},
		entry{path: "/kind/version", data: []byte(KubernetesVersion + "\n"), mode: 0o644},
		entry{path: "/kind/images", data: []byte(strings.Join(preloaded, "\n") + "\n"), mode: 0o644},
		entry{path: "/kind/manifests/default-storage.yaml", data: []byte(StorageClassManifest()), mode: 0o644},
		// What `systemctl enable` links.
		entry{path: "/etc/systemd/system/multi-user.target.wants/containerd.service", target: "/etc/systemd/system/containerd.service"},
		entry{path: "/etc/systemd/system/multi-user.target.wants/kubelet.service", target: "/etc/systemd/system/kubelet.service"},
	)
	return es, nil
}

// kubeInputs hashes the kube layer's entries: inline data, and the size and
// modification time of host files.
func kubeInputs(es []entry) (string, error) {
	sorted := append([]entry(nil), es...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].path < sorted[j].path })
	h := sha256.New()
	fmt.Fprintf(h, "builder %s\n", builderVersion)
	for _, e := range sorted {
		switch {
		case e.src != "":
			st, err := os.Stat(e.src)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "%s %o file %s %d %d\n", e.path, e.mode, e.src, st.Size(), st.ModTime().UnixNano())
		case e.target != "":
			fmt.Fprintf(h, "%s link %s\n", e.path, e.target)
		default:
			sum := sha256.Sum256(e.data)
			fmt.Fprintf(h, "%s %o data %s\n", e.path, e.mode, hex.EncodeToString(sum[:]))
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// buildKube writes the kube layer unless it is there from the same inputs.
func (b *builder) buildKube(ctx context.Context) error {
	es, err := b.kubeEntries(ctx)
	if err != nil {
		return err
	}
	file := b.c.dir("kube.tar")
	inputs, err := kubeInputs(es)
	if err != nil {
		return err
	}
	if l, ok := cachedLayer(file, inputs); ok {
		b.kube = l
		return nil
	}
	lw, err := newLayerWriter(file)
	if err != nil {
		return err
	}
	if err := lw.addEntries(es); err != nil {
		lw.abort()
		return err
	}
	b.kube, err = lw.finish(file, inputs)
	return err
}
