package framework

import (
	"fmt"

	"github.com/valkey-operator/valkey-operator/images"
)

// Images returns the image manifest of the cache (read once per suite).
func (k *Cluster) Images() (images.Manifest, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.manifest != nil {
		return *k.manifest, nil
	}
	m, err := images.ReadManifest(k.Paths.CacheDir)
	if err != nil {
		return images.Manifest{}, fmt.Errorf("%w (run make images)", err)
	}
	k.manifest = &m
	return m, nil
}

// ValkeyImage returns the reference of the Valkey image of version major.minor.
func (k *Cluster) ValkeyImage(major, minor int) (images.Image, error) {
	m, err := k.Images()
	if err != nil {
		return images.Image{}, err
	}
	img, ok := m.Valkey(major, minor)
	if !ok {
		return images.Image{}, fmt.Errorf("no Valkey %d.%d image in the manifest", major, minor)
	}
	return img, nil
}

// ComponentImage returns the image of a component (images.ComponentToolbox, ...).
func (k *Cluster) ComponentImage(component string) (images.Image, error) {
	m, err := k.Images()
	if err != nil {
		return images.Image{}, err
	}
	img, ok := m.Component(component)
	if !ok {
		return images.Image{}, fmt.Errorf("no %s image in the manifest", component)
	}
	return img, nil
}
