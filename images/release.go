package images

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ReleaseImage describes the operator's release image: one image for every component,
// one manifest per platform under an OCI image index.
type ReleaseImage struct {
	// Binaries maps a platform ("linux/amd64") to its static binaries, name to path;
	// each goes to /usr/local/bin/<name>.
	Binaries map[string]map[string]string
	// Labels are the OCI labels of every platform's image
	// (org.opencontainers.image.source, .version, .revision, ...).
	Labels map[string]string
}

// ParsePlatform reads "os/arch".
func ParsePlatform(s string) (v1.Platform, error) {
	os, arch, ok := strings.Cut(s, "/")
	if !ok || os == "" || arch == "" || strings.Contains(arch, "/") {
		return v1.Platform{}, fmt.Errorf("platform %q: want os/arch, e.g. linux/arm64", s)
	}
	return v1.Platform{OS: os, Architecture: arch}, nil
}

// BuildReleaseIndex builds the operator's image for every platform of r and returns the
// index (OCI media types), its platforms in a fixed order. The images run as nonroot
// (65532) with the binaries in /usr/local/bin; entries have mtime 0, so equal binaries
// give equal digests.
func BuildReleaseIndex(r ReleaseImage, tmpDir string) (v1.ImageIndex, error) {
	if len(r.Binaries) == 0 {
		return nil, fmt.Errorf("release image: no platform")
	}
	platforms := make([]string, 0, len(r.Binaries))
	for p := range r.Binaries {
		platforms = append(platforms, p)
	}
	slices.Sort(platforms)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, ps := range platforms {
		p, err := ParsePlatform(ps)
		if err != nil {
			return nil, err
		}
		img, err := releasePlatformImage(p, r.Binaries[ps], r.Labels, tmpDir)
		if err != nil {
			return nil, fmt.Errorf("release image %s: %w", ps, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &p, MediaType: types.OCIManifestSchema1},
		})
	}
	return idx, nil
}

func releasePlatformImage(p v1.Platform, bins map[string]string, labels map[string]string, tmpDir string) (v1.Image, error) {
	if len(bins) == 0 {
		return nil, fmt.Errorf("no binaries")
	}
	names := make([]string, 0, len(bins))
	for n := range bins {
		names = append(names, n)
	}
	slices.Sort(names)
	t := newTree()
	for _, n := range names {
		if err := checkStatic(bins[n]); err != nil {
			return nil, fmt.Errorf("binary %s: %w", n, err)
		}
		t.file("/usr/local/bin/"+n, bins[n], 0o755)
	}
	addBase(t, operatorAccounts)
	t.dir("/home/nonroot", 0o700, 65532, 65532)

	layerFile := filepath.Join(tmpDir, fmt.Sprintf("layer-%s-%s.tar", p.OS, p.Architecture))
	if err := writeLayerFile(layerFile, t); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromFile(layerFile, tarball.WithCompressedCaching, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("read layer: %w", err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = p.OS, p.Architecture
	cf.Created = v1.Time{Time: epoch}
	cf.Config = v1.Config{User: "65532:65532", Env: []string{pathEnv}, WorkingDir: "/", Labels: labels}
	return mutate.ConfigFile(img, cf)
}

// WriteLayout writes idx as an OCI image layout in dir (replacing what was there).
func WriteLayout(dir string, idx v1.ImageIndex) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if _, err := layout.Write(dir, idx); err != nil {
		return fmt.Errorf("write OCI layout %s: %w", dir, err)
	}
	return nil
}

// ReadLayout reads the image index WriteLayout wrote (the layout's index.json is it).
func ReadLayout(dir string) (v1.ImageIndex, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("read OCI layout %s: %w", dir, err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("read OCI layout %s: %w", dir, err)
	}
	return idx, nil
}

// PushIndex pushes idx to ref with the credentials of the usual docker config file
// ($DOCKER_CONFIG/config.json or ~/.docker/config.json) and returns the pushed digest.
// insecure allows a registry served over plain HTTP.
func PushIndex(ref string, idx v1.ImageIndex, insecure bool) (string, error) {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return "", fmt.Errorf("image reference %q: %w", ref, err)
	}
	if err := remote.WriteIndex(r, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}
