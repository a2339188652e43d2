package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// builderVersion is hashed into every image's inputs: bump it whenever the
// code that lays out or configures images changes, so that cached tarballs
// are rebuilt.
const builderVersion = "1"

// DefaultOperatorRef is the operator image's tag when Config.OperatorRef is
// empty.
const DefaultOperatorRef = "docker.io/library/valkey-operator:dev"

// Config configures Build.
type Config struct {
	// CacheDir holds everything (e.g. /work/main/.cache); Build owns
	// CacheDir/debian/ and CacheDir/images/.
	CacheDir string
	// OperatorBinaries maps a name to the path of a static binary, installed
	// as /usr/local/bin/<name> in the operator image. Empty: no operator
	// image.
	OperatorBinaries map[string]string
	// OperatorRef is the operator image's tag (DefaultOperatorRef if empty).
	OperatorRef string
	// S3Binary is the path of a static versitygw binary (hack/deps.sh installs it), put
	// in the S3 server image (S3Ref) of the backup suites. Empty: no S3 image.
	S3Binary string
	// NetpolBinary is the path of a static kube-network-policies binary (localkube
	// build makes it), put in the NetworkPolicy engine's image (NetpolRef). Empty: no
	// engine image.
	NetpolBinary string
	// MonitoringBinaries maps ComponentPrometheusOperator and ComponentConfigReloader to
	// their static binaries (localkube build --monitoring makes them), for the e2e
	// monitoring suite's images, Prometheus included. Empty: none of the three.
	MonitoringBinaries map[string]string
	// MonitoringVersion is the tag of the Prometheus Operator's two images.
	MonitoringVersion string
	// CertManagerBinary is the path of the static cert-manager program (localkube build
	// --certmanager makes it), put in the ComponentCertManager image of the e2e suites
	// that use cert-manager. Empty: no such image.
	CertManagerBinary string
	// CertManagerVersion is the tag of the cert-manager image.
	CertManagerVersion string
	// Impostor also builds ImpostorRef: bookworm's redis-server 7.0 under the name
	// valkey-server, tagged as a Valkey image, for the e2e security suite (a server that
	// is not Valkey 8.0+ and that admission cannot tell apart).
	Impostor bool
	// Refresh downloads the Debian package lists again and re-resolves the
	// packages, picking up new versions. Without it the network is used only
	// when a package is missing.
	Refresh bool
	// ModuleDir is the images module's directory, whose cmd/pause is built for
	// the pause image. Empty: found from the working directory upwards.
	ModuleDir string
	// Log receives progress lines; nil discards them.
	Log func(format string, args ...any)
}

// Build builds every image into CacheDir/images/ and writes the manifest.
// An image is rebuilt only when its inputs hash (packages, binaries,
// sources, layout code) changed; a warm Build touches neither the network
// nor apt.
func Build(ctx context.Context, c Config) (Manifest, error) {
	start := time.Now()
	b, err := newBuilder(c)
	if err != nil {
		return Manifest{}, err
	}
	defer b.close()
	specs, err := b.specs(ctx)
	if err != nil {
		return Manifest{}, err
	}
	var m Manifest
	for _, s := range specs {
		img, err := b.image(ctx, s)
		if err != nil {
			return Manifest{}, err
		}
		m.Images = append(m.Images, img)
	}
	if err := m.write(c.CacheDir); err != nil {
		return Manifest{}, err
	}
	b.log("images: %d images ready in %s", len(m.Images), time.Since(start).Round(time.Millisecond))
	return m, nil
}

// builder is the state of one Build.
type builder struct {
	c        Config
	dir      string // CacheDir/images
	lock     *os.File
	log      func(string, ...any)
	repos    map[string]*repo
	res      map[string]resolution
	stagings map[string]*staging
}

// newBuilder creates the cache directories and takes the build lock, so
// that concurrent Builds on one cache directory run one after the other.
func newBuilder(c Config) (*builder, error) {
	if c.CacheDir == "" {
		return nil, errors.New("build images: Config.CacheDir is empty")
	}
	abs, err := filepath.Abs(c.CacheDir)
	if err != nil {
		return nil, fmt.Errorf("build images: %w", err)
	}
	c.CacheDir = abs
	b := &builder{c: c, dir: filepath.Join(abs, "images"), log: c.Log, stagings: map[string]*staging{}}
	if b.log == nil {
		b.log = func(string, ...any) {}
	}
	if err := os.MkdirAll(filepath.Join(b.dir, "bin"), 0o755); err != nil {
		return nil, fmt.Errorf("build images: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(b.dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("build images: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("build images: lock %s: %w", lock.Name(), err)
	}
	b.lock = lock
	return b, nil
}

// close removes the staging trees and releases the lock.
func (b *builder) close() {
	for _, s := range b.stagings {
		if err := os.RemoveAll(string(s.root)); err != nil {
			b.log("images: remove staging: %v", err)
		}
	}
	_ = b.lock.Close()
}

// spec is one image to build.
type spec struct {
	Image            // without File, ID and Size
	file   string    // tarball base name, without ".tar"
	config v1.Config // the image config (User, Cmd, ...)
	inputs []string  // what else the image depends on (packages, binaries)
	fill   func(ctx context.Context, t tree) error
}

// stamp is stored next to a tarball as <tarball>.json.
type stamp struct {
	Inputs string `json:"inputs"`
	Image  Image  `json:"image"`
}

// inputsHash hashes everything the tarball is made from.
func (s spec) inputsHash() (string, error) {
	data, err := json.Marshal(struct {
		Builder string
		Image   Image
		Config  v1.Config
		Inputs  []string
		Applets []string
		Users   []accounts
	}{builderVersion, s.Image, s.config, s.inputs, busyboxApplets, []accounts{valkeyAccounts, operatorAccounts}})
	if err != nil {
		return "", fmt.Errorf("hash inputs of %s: %w", s.Ref, err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// image returns the cached image of s, or builds it.
func (b *builder) image(ctx context.Context, s spec) (Image, error) {
	file := filepath.Join(b.dir, s.file+".tar")
	hash, err := s.inputsHash()
	if err != nil {
		return Image{}, err
	}
	if img, ok := cachedImage(file, hash); ok {
		return img, nil
	}
	start := time.Now()
	t := newTree()
	if err := s.fill(ctx, t); err != nil {
		return Image{}, fmt.Errorf("build %s: %w", s.Ref, err)
	}
	img := s.Image
	img.File = file
	if img.ID, img.Size, err = writeImage(file, s.Tags, s.config, t); err != nil {
		return Image{}, fmt.Errorf("build %s: %w", s.Ref, err)
	}
	data, err := json.MarshalIndent(stamp{Inputs: hash, Image: img}, "", "  ")
	if err != nil {
		return Image{}, fmt.Errorf("build %s: %w", s.Ref, err)
	}
	if err := writeIfChanged(file+".json", data); err != nil {
		return Image{}, fmt.Errorf("build %s: %w", s.Ref, err)
	}
	b.log("images: built %s (%d files, %.1f MB) in %s", s.Ref, len(t), float64(img.Size)/1e6, time.Since(start).Round(time.Millisecond))
	return img, nil
}

// cachedImage returns the image recorded next to file when its inputs hash
// is hash and the tarball is intact.
func cachedImage(file, hash string) (Image, bool) {
	data, err := os.ReadFile(file + ".json")
	if err != nil {
		return Image{}, false
	}
	var st stamp
	if json.Unmarshal(data, &st) != nil || st.Inputs != hash {
		return Image{}, false
	}
	fi, err := os.Stat(file)
	if err != nil || fi.Size() != st.Image.Size {
		return Image{}, false
	}
	st.Image.File = file
	return st.Image, true
}
