package images

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Components of the images in a Manifest.
const (
	ComponentValkey   = "valkey"
	ComponentExporter = "exporter"
	ComponentPause    = "pause"
	ComponentToolbox  = "toolbox"
	ComponentOperator = "operator"
	ComponentS3       = "s3"
	ComponentNetpol   = "netpol"
	// ComponentImpostor is Redis under the name valkey-server (Config.Impostor).
	ComponentImpostor = "impostor"
)

// Image is one built image: a docker-archive tarball holding one image under
// one or more tags.
type Image struct {
	// Ref is the main tag, e.g. "docker.io/valkey/valkey:8.0.1".
	Ref string `json:"ref"`
	// Tags are all the tags of the tarball, Ref first
	// (e.g. also "docker.io/valkey/valkey:8.0").
	Tags []string `json:"tags"`
	// File is the docker-archive tarball, for Import or `ctr images import`.
	File string `json:"file"`
	// Component is one of the Component* constants.
	Component string `json:"component"`
	// Version is the exact upstream version (Valkey's, the exporter's), or
	// the version of the tag for the others.
	Version string `json:"version"`
	// Package is the Debian package and its exact Debian version, e.g.
	// "valkey-server=8.0.1+dfsg1-1~bpo12+1"; empty for pause and operator.
	Package string `json:"package,omitempty"`
	// Suite is the Debian suite the package comes from, e.g.
	// "bookworm-backports"; empty for pause and operator.
	Suite string `json:"suite,omitempty"`
	// ID is the image ID (the digest of its config), as the container
	// runtime reports it in a pod's status.containerStatuses[].imageID.
	ID string `json:"id"`
	// Size is the size of File in bytes.
	Size int64 `json:"size"`
}

// Manifest lists the images of one Build. It is stored as
// CacheDir/images/manifest.json, the one place tests read exact versions
// and image references from.
type Manifest struct {
	Images []Image `json:"images"`
}

// manifestPath returns the path of the manifest under cacheDir.
func manifestPath(cacheDir string) string {
	return filepath.Join(cacheDir, "images", "manifest.json")
}

// ReadManifest reads the manifest the last Build wrote under cacheDir.
func ReadManifest(cacheDir string) (Manifest, error) {
	var m Manifest
	data, err := os.ReadFile(manifestPath(cacheDir))
	if err != nil {
		return Manifest{}, fmt.Errorf("read image manifest: %w", err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return Manifest{}, fmt.Errorf("parse image manifest %s: %w", manifestPath(cacheDir), err)
	}
	return m, nil
}

// write stores the manifest under cacheDir.
func (m Manifest) write(cacheDir string) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("write image manifest: %w", err)
	}
	if err := writeIfChanged(manifestPath(cacheDir), append(data, '\n')); err != nil {
		return fmt.Errorf("write image manifest: %w", err)
	}
	return nil
}

// Valkey returns the Valkey image of version major.minor.
func (m Manifest) Valkey(major, minor int) (Image, bool) {
	for _, img := range m.ValkeyImages() {
		v := parseVersion(img.Version)
		if len(v) >= 2 && v[0] == major && v[1] == minor {
			return img, true
		}
	}
	return Image{}, false
}

// ValkeyImages returns the Valkey images, oldest version first.
func (m Manifest) ValkeyImages() []Image {
	var out []Image
	for _, img := range m.Images {
		if img.Component == ComponentValkey {
			out = append(out, img)
		}
	}
	slices.SortFunc(out, func(a, b Image) int { return compareVersions(a.Version, b.Version) })
	return out
}

// Component returns the first image of the given component.
func (m Manifest) Component(component string) (Image, bool) {
	for _, img := range m.Images {
		if img.Component == component {
			return img, true
		}
	}
	return Image{}, false
}

// Files returns the tarballs of all images, for Import.
func (m Manifest) Files() []string {
	out := make([]string, 0, len(m.Images))
	for _, img := range m.Images {
		out = append(out, img.File)
	}
	return out
}

// parseVersion returns the numeric fields of a dotted version ("9.1.2").
// Parsing stops at the first non-numeric field.
func parseVersion(v string) []int {
	var out []int
	for _, f := range strings.Split(strings.TrimPrefix(v, "v"), ".") {
		n, err := strconv.Atoi(f)
		if err != nil {
			break
		}
		out = append(out, n)
	}
	return out
}

// compareVersions orders dotted versions numerically.
func compareVersions(a, b string) int {
	if c := slices.Compare(parseVersion(a), parseVersion(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// upstreamVersion returns the upstream part of a Debian version:
// "1:8.0.1+dfsg1-1~bpo12+1" -> "8.0.1".
func upstreamVersion(debian string) string {
	v := debian
	if _, after, ok := strings.Cut(v, ":"); ok {
		v = after
	}
	if i := strings.LastIndex(v, "-"); i >= 0 {
		v = v[:i]
	}
	if i := strings.IndexAny(v, "+~"); i >= 0 {
		v = v[:i]
	}
	return v
}

// majorMinor returns "8.0" for "8.0.1".
func majorMinor(v string) string {
	n := parseVersion(v)
	if len(n) < 2 {
		return v
	}
	return fmt.Sprintf("%d.%d", n[0], n[1])
}
