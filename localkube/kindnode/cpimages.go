package kindnode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/valkey-operator/valkey-operator/images"
)

// cpImage is an image the node's containerd holds from the start.
type cpImage struct {
	Ref  string `json:"ref"`
	File string `json:"file"`
	ID   string `json:"id"`
	// Inputs is the hash of what it was made from.
	Inputs string `json:"inputs"`
}

// kubeProxyTools are the programs of the base layer in the kube-proxy image: nft for
// its nftables mode (the provider's choice) and iptables-nft for its iptables mode and
// its clean-up of the other mode's rules, on the backend the node's own tools use.
var kubeProxyTools = []string{
	"/usr/sbin/nft",
	"/usr/sbin/iptables", "/usr/sbin/iptables-save", "/usr/sbin/iptables-restore",
	"/usr/sbin/ip6tables", "/usr/sbin/ip6tables-save", "/usr/sbin/ip6tables-restore",
}

// imagePath is the PATH of the control-plane images (kube-proxy runs nft and iptables
// from /usr/sbin).
const imagePath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// cpSpec describes one control-plane image.
type cpSpec struct {
	name string
	fi   images.FileImage
}

// controlPlaneSpecs are the images kubeadm's static pods and add-ons run, with the tags
// kubeadm v1.37 asks for (CoreDNS: the tag the provider configures).
func (b *builder) controlPlaneSpecs() []cpSpec {
	bin := func(name string) string { return filepath.Join(b.lk.BinDir(), name) }
	static := func(name string) cpSpec {
		return cpSpec{name: name, fi: images.FileImage{
			Tags:   []string{"registry.k8s.io/" + name + ":" + KubernetesVersion},
			Files:  map[string]string{"/usr/local/bin/" + name: bin(name)},
			Config: v1.Config{Env: []string{imagePath}},
		}}
	}
	proxy := static("kube-proxy")
	proxy.fi.Root, proxy.fi.FromRoot = b.baseDir(), kubeProxyTools
	return []cpSpec{
		static("kube-apiserver"),
		static("kube-controller-manager"),
		static("kube-scheduler"),
		proxy,
		{name: "etcd", fi: images.FileImage{
			Tags:   []string{"registry.k8s.io/etcd:" + EtcdImageTag},
			Files:  map[string]string{"/usr/local/bin/etcd": bin("etcd")},
			Config: v1.Config{Env: []string{imagePath}},
		}},
		{name: "coredns", fi: images.FileImage{
			Tags:   []string{"registry.k8s.io/coredns/coredns:" + CoreDNSImageTag},
			Files:  map[string]string{"/coredns": b.lk.CoreDNSBinary()},
			Config: v1.Config{Entrypoint: []string{"/coredns"}, Env: []string{imagePath}, ExposedPorts: map[string]struct{}{"53/tcp": {}, "53/udp": {}}},
		}},
	}
}

// inputsOf hashes what a FileImage is made from: tags, config, the host files' size
// and modification time, and the base layer when programs come from it.
func (b *builder) inputsOf(fi images.FileImage) (string, error) {
	h := sha256.New()
	cfg, err := json.Marshal(fi.Config)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "builder %s\ntags %v\nconfig %s\n", builderVersion, fi.Tags, cfg)
	paths := make([]string, 0, len(fi.Files))
	for p := range fi.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		st, err := os.Stat(fi.Files[p])
		if err != nil {
			return "", fmt.Errorf("%s: %w (make local-build builds it)", fi.Files[p], err)
		}
		fmt.Fprintf(h, "%s %s %d %d\n", p, fi.Files[p], st.Size(), st.ModTime().UnixNano())
	}
	if len(fi.FromRoot) > 0 {
		fmt.Fprintf(h, "root %s %v\n", b.base.DiffID, fi.FromRoot)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// buildControlPlaneImages writes the control-plane images that are missing or stale,
// and adds the project's pause image (make images).
func (b *builder) buildControlPlaneImages(_ context.Context) error {
	dir := b.c.dir("images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b.cpImages = nil
	for _, s := range b.controlPlaneSpecs() {
		inputs, err := b.inputsOf(s.fi)
		if err != nil {
			return err
		}
		file := filepath.Join(dir, s.name+".tar")
		var img cpImage
		if data, err := os.ReadFile(file + ".json"); err == nil && json.Unmarshal(data, &img) == nil && img.Inputs == inputs {
			if _, err := os.Stat(file); err == nil {
				b.cpImages = append(b.cpImages, img)
				continue
			}
		}
		id, err := images.WriteFileImage(file, s.fi)
		if err != nil {
			return err
		}
		img = cpImage{Ref: s.fi.Tags[0], File: file, ID: id, Inputs: inputs}
		data, err := json.MarshalIndent(img, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(file+".json", append(data, '\n'), 0o644); err != nil {
			return err
		}
		b.c.Log("image %s (%s)", img.Ref, id)
		b.cpImages = append(b.cpImages, img)
	}
	m, err := images.ReadManifest(b.c.CacheDir)
	if err != nil {
		return fmt.Errorf("%w (make images builds the pause image)", err)
	}
	pause, ok := m.Component(images.ComponentPause)
	if !ok {
		return fmt.Errorf("no pause image in the image manifest: run make images")
	}
	if !contains(pause.Tags, PauseImage) && pause.Ref != PauseImage {
		return fmt.Errorf("the pause image is %s, the node's containerd wants %s", pause.Ref, PauseImage)
	}
	b.cpImages = append(b.cpImages, cpImage{Ref: PauseImage, File: pause.File, ID: pause.ID})
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
