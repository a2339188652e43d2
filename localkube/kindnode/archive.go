package kindnode

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// config is the node image's configuration: the entrypoint, the environment systemd
// reads to know it runs in a container, and the signal that stops systemd cleanly.
func (b *builder) config() ([]byte, error) {
	cf := v1.ConfigFile{
		Architecture: "amd64",
		OS:           "linux",
		Created:      v1.Time{Time: epoch},
		Config: v1.Config{
			Entrypoint: []string{"/usr/local/bin/entrypoint", "/sbin/init"},
			Env:        []string{"container=docker", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			StopSignal: "SIGRTMIN+3",
			Labels: map[string]string{
				"io.valkey-operator.kind-node.kubernetes": KubernetesVersion,
				"io.valkey-operator.kind-node.containerd": ContainerdVersion,
				"io.valkey-operator.kind-node.runc":       RuncVersion,
				"io.valkey-operator.kind-node.base":       "debian " + baseSuite,
			},
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	for _, l := range []Layer{b.base, b.kube, b.preload} {
		h, err := v1.NewHash(l.DiffID)
		if err != nil {
			return nil, err
		}
		cf.RootFS.DiffIDs = append(cf.RootFS.DiffIDs, h)
	}
	return json.Marshal(cf)
}

// image assembles the image from the built layers and records it in CacheDir/kind/node.json.
func (b *builder) image() (Image, error) {
	cfg, err := b.config()
	if err != nil {
		return Image{}, err
	}
	sum := sha256.Sum256(cfg)
	img := Image{Ref: ImageRef, ID: "sha256:" + hex.EncodeToString(sum[:]), Layers: []Layer{b.base, b.kube, b.preload}}
	data, err := json.MarshalIndent(img, "", "  ")
	if err != nil {
		return Image{}, err
	}
	if err := os.WriteFile(b.c.dir("node.json"), append(data, '\n'), 0o644); err != nil {
		return Image{}, err
	}
	if err := os.WriteFile(b.c.dir("node-config.json"), cfg, 0o644); err != nil {
		return Image{}, err
	}
	return img, nil
}

// WriteArchive writes img as a docker-archive (the format `docker load` reads) to w.
func WriteArchive(c Config, img Image, w io.Writer) error {
	cfg, err := os.ReadFile(c.dir("node-config.json"))
	if err != nil {
		return err
	}
	id := strings.TrimPrefix(img.ID, "sha256:")
	manifest := []map[string]any{{"Config": id + ".json", "RepoTags": []string{img.Ref}, "Layers": []string{}}}
	var layers []string
	for _, l := range img.Layers {
		layers = append(layers, strings.TrimPrefix(l.DiffID, "sha256:")+"/layer.tar")
	}
	manifest[0]["Layers"] = layers
	man, err := json.Marshal(manifest)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	add := func(name string, size int64, r io.Reader) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := io.Copy(tw, r)
		return err
	}
	if err := add(id+".json", int64(len(cfg)), bytes.NewReader(cfg)); err != nil {
		return err
	}
	for i, l := range img.Layers {
		f, err := os.Open(l.File)
		if err != nil {
			return err
		}
		st, err := f.Stat()
		if err == nil {
			err = add(layers[i], st.Size(), f)
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("layer %s: %w", l.File, err)
		}
	}
	if err := add("manifest.json", int64(len(man)), bytes.NewReader(man)); err != nil {
		return err
	}
	return tw.Close()
}

// DockerImageID returns the ID of ref in the Docker engine, or "" when it has none.
func DockerImageID(ctx context.Context, ref string) string {
	out, err := exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{.Id}}", ref).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// Load loads img into the Docker engine unless it has that image ID under img.Ref; it
// reports whether it loaded. Layers the engine has are not unpacked again.
func Load(ctx context.Context, c Config, img Image) (bool, error) {
	c, err := c.withDefaults()
	if err != nil {
		return false, err
	}
	if DockerImageID(ctx, img.Ref) == img.ID {
		return false, nil
	}
	pr, pw := io.Pipe()
	cmd := exec.CommandContext(ctx, "docker", "load")
	cmd.Stdin = pr
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("docker load: %w", err)
	}
	werr := WriteArchive(c, img, pw)
	pw.CloseWithError(werr)
	if err := cmd.Wait(); err != nil {
		return false, fmt.Errorf("docker load: %w\n%s", err, tail(out.Bytes(), 10))
	}
	if werr != nil {
		return false, fmt.Errorf("docker load: %w", werr)
	}
	if got := DockerImageID(ctx, img.Ref); got != img.ID {
		return false, fmt.Errorf("docker load: %s is %q, want %s", img.Ref, got, img.ID)
	}
	return true, nil
}
