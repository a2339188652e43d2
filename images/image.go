package images

import (
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// writeImage writes t as the single layer of a linux/amd64 image with the
// given config to the docker-archive tarball file, under every tag. It
// returns the image ID (config digest) and the tarball's size.
func writeImage(file string, tags []string, cfg v1.Config, t tree) (id string, size int64, err error) {
	layerFile := file + ".layer.tmp"
	defer os.Remove(layerFile)
	if err := writeLayerFile(layerFile, t); err != nil {
		return "", 0, err
	}
	img, err := newImage(layerFile, cfg)
	if err != nil {
		return "", 0, err
	}
	refs := map[name.Reference]v1.Image{}
	for _, tag := range tags {
		ref, err := name.NewTag(tag)
		if err != nil {
			return "", 0, fmt.Errorf("parse tag %s: %w", tag, err)
		}
		refs[ref] = img
	}
	tmp := file + ".tmp"
	if err := tarball.MultiRefWriteToFile(tmp, refs); err != nil {
		_ = os.Remove(tmp)
		return "", 0, fmt.Errorf("write %s: %w", file, err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return "", 0, fmt.Errorf("write %s: %w", file, err)
	}
	digest, err := img.ConfigName()
	if err != nil {
		return "", 0, fmt.Errorf("image ID of %s: %w", file, err)
	}
	fi, err := os.Stat(file)
	if err != nil {
		return "", 0, fmt.Errorf("write %s: %w", file, err)
	}
	return digest.String(), fi.Size(), nil
}

// writeLayerFile writes t as an uncompressed tar file.
func writeLayerFile(p string, t tree) error {
	f, err := os.Create(p)
	if err != nil {
		return fmt.Errorf("write layer: %w", err)
	}
	if err := t.writeTar(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("write layer %s: %w", p, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write layer %s: %w", p, err)
	}
	return nil
}

// newImage makes the one-layer image; the layer is gzipped once (level
// BestSpeed, the tarball package's default) and kept in memory.
func newImage(layerFile string, cfg v1.Config) (v1.Image, error) {
	layer, err := tarball.LayerFromFile(layerFile, tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("read layer %s: %w", layerFile, err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Created = v1.Time{Time: epoch}
	cf.Config = cfg
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("set config: %w", err)
	}
	return img, nil
}
