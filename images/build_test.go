package images

import (
	"archive/tar"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLocalImages builds the two images that need no network, pause and
// operator, and checks their tarballs as the container runtime reads them.
func TestLocalImages(t *testing.T) {
	ctx := context.Background()
	cache := t.TempDir()
	opBin := filepath.Join(cache, "manager")
	if err := goBuild(ctx, "cmd/pause", opBin); err != nil { // any static binary does
		t.Fatal(err)
	}
	b, err := newBuilder(Config{CacheDir: cache, OperatorBinaries: map[string]string{"manager": opBin}, S3Binary: opBin, NetpolBinary: opBin,
		CertManagerBinary: opBin, CertManagerVersion: "v1.2.3", ModuleDir: "."})
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()

	pause := buildSpec(t, b, b.pauseSpec)
	img := loadImage(t, pause.File)
	assertConfig(t, img, "65535:65535", nil, []string{"/pause"})
	assertFiles(t, layerFiles(t, img), map[string]byte{"/pause": tar.TypeReg})
	if got := repoTags(t, pause.File); !slices.Equal(got, []string{PauseRef}) {
		t.Errorf("pause tags %v", got)
	}

	op := buildSpec(t, b, b.operatorSpec)
	img = loadImage(t, op.File)
	assertConfig(t, img, "65532:65532", nil, []string{"/usr/local/bin/manager"})
	files := layerFiles(t, img)
	assertFiles(t, files, map[string]byte{
		"/usr/local/bin/manager": tar.TypeReg, "/etc/passwd": tar.TypeReg, "/etc/group": tar.TypeReg,
		"/tmp": tar.TypeDir, "/home/nonroot": tar.TypeDir, "/bin": tar.TypeSymlink,
	})
	if got := repoTags(t, op.File); !slices.Equal(got, []string{DefaultOperatorRef}) {
		t.Errorf("operator tags %v", got)
	}
	root := unpackImage(t, img)
	passwd, err := os.ReadFile(root.host("/etc/passwd"))
	if err != nil || !strings.Contains(string(passwd), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd = %q, %v", passwd, err)
	}
	if fi, err := os.Stat(root.host("/tmp")); err != nil || fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm() != 0o777 {
		t.Errorf("/tmp mode: %v %v", fi.Mode(), err)
	}

	s3 := buildSpec(t, b, b.s3Spec)
	img = loadImage(t, s3.File)
	assertConfig(t, img, "65532:65532", nil, []string{"/usr/local/bin/versitygw"})
	assertFiles(t, layerFiles(t, img), map[string]byte{"/usr/local/bin/versitygw": tar.TypeReg, "/etc/passwd": tar.TypeReg})
	if got := repoTags(t, s3.File); !slices.Equal(got, []string{S3Ref}) {
		t.Errorf("S3 tags %v", got)
	}

	np := buildSpec(t, b, b.netpolSpec)
	img = loadImage(t, np.File)
	assertConfig(t, img, "", nil, []string{"/usr/local/bin/netpol"})
	assertFiles(t, layerFiles(t, img), map[string]byte{"/usr/local/bin/netpol": tar.TypeReg, "/etc/passwd": tar.TypeReg})
	if got := repoTags(t, np.File); !slices.Equal(got, []string{NetpolRef}) {
		t.Errorf("NetworkPolicy engine tags %v", got)
	}

	cm := buildSpec(t, b, b.certManagerSpec)
	img = loadImage(t, cm.File)
	assertConfig(t, img, "65534:65534", nil, []string{"/usr/local/bin/cert-manager"})
	assertFiles(t, layerFiles(t, img), map[string]byte{"/usr/local/bin/cert-manager": tar.TypeReg, "/etc/passwd": tar.TypeReg})
	if got := repoTags(t, cm.File); !slices.Equal(got, []string{"docker.io/local/cert-manager:v1.2.3"}) || cm.Component != ComponentCertManager {
		t.Errorf("cert-manager tags %v, component %q", got, cm.Component)
	}

	// Unchanged inputs: the tarball is reused.
	start := time.Now()
	again := buildSpec(t, b, b.operatorSpec)
	if again.ID != op.ID || time.Since(start) > time.Second {
		t.Errorf("rebuilt the operator image: %s -> %s in %s", op.ID, again.ID, time.Since(start))
	}
}

// buildSpec builds the image of one spec.
func buildSpec(t *testing.T, b *builder, mk func() (spec, error)) Image {
	t.Helper()
	s, err := mk()
	if err != nil {
		t.Fatal(err)
	}
	img, err := b.image(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestManifestRoundTrip writes and reads a manifest and checks the lookups.
func TestManifestRoundTrip(t *testing.T) {
	cache := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cache, "images"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := Manifest{Images: []Image{
		{Ref: "docker.io/valkey/valkey:9.1.2", Component: ComponentValkey, Version: "9.1.2", Package: "valkey-server=9.1.2-1", Suite: "sid"},
		{Ref: "docker.io/oliver006/redis_exporter:v1.86.0", Component: ComponentExporter, Version: "1.86.0"},
		{Ref: "docker.io/valkey/valkey:8.0.1", Component: ComponentValkey, Version: "8.0.1", Tags: []string{"docker.io/valkey/valkey:8.0.1", "docker.io/valkey/valkey:8.0"}},
		{Ref: "docker.io/valkey/valkey:8.1.10", Component: ComponentValkey, Version: "8.1.10"},
	}}
	if err := m.write(cache); err != nil {
		t.Fatal(err)
	}
	got, err := ReadManifest(cache)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got.Images, m.Images, func(a, b Image) bool { return a.Ref == b.Ref && slices.Equal(a.Tags, b.Tags) && a.Package == b.Package }) {
		t.Errorf("round trip: got %+v, want %+v", got.Images, m.Images)
	}
	var versions []string
	for _, img := range got.ValkeyImages() {
		versions = append(versions, img.Version)
	}
	if want := []string{"8.0.1", "8.1.10", "9.1.2"}; !slices.Equal(versions, want) {
		t.Errorf("ValkeyImages versions %v, want %v", versions, want)
	}
	if img, ok := got.Valkey(8, 1); !ok || img.Version != "8.1.10" {
		t.Errorf("Valkey(8, 1) = %v %v", img.Ref, ok)
	}
	if _, ok := got.Valkey(7, 2); ok {
		t.Error("Valkey(7, 2) found an image")
	}
	if _, err := ReadManifest(t.TempDir()); err == nil {
		t.Error("ReadManifest of an empty cache succeeded")
	}
}

// TestUpstreamVersion covers the Debian version forms met in the suites.
func TestUpstreamVersion(t *testing.T) {
	for debian, want := range map[string]string{
		"8.0.1+dfsg1-1~bpo12+1": "8.0.1",
		"8.1.1+dfsg1-3+deb13u3": "8.1.1",
		"9.1.2-1":               "9.1.2",
		"1.86.0-1":              "1.86.0",
		"1:1.35.0-4+deb12u1+b1": "1.35.0",
		"2.0~rc1-2":             "2.0",
	} {
		if got := upstreamVersion(debian); got != want {
			t.Errorf("upstreamVersion(%q) = %q, want %q", debian, got, want)
		}
	}
}

// TestParseInst parses apt-get -s lines.
func TestParseInst(t *testing.T) {
	d, ok := parseInst("Inst zlib1g (1:1.3.dfsg+really1.3.2-4 Debian:unstable [amd64]) []")
	if !ok || d.Name != "zlib1g" || d.File != "zlib1g_1%3a1.3.dfsg+really1.3.2-4_amd64.deb" || d.Release != "Debian:unstable" {
		t.Errorf("parseInst = %+v %v", d, ok)
	}
	if _, ok := parseInst("Conf zlib1g (1:1.3 Debian:unstable [amd64])"); ok {
		t.Error("parsed a Conf line")
	}
}

// TestSignatureProblem recognises apt's signature failures.
func TestSignatureProblem(t *testing.T) {
	for out, want := range map[string]bool{
		"W: GPG error: http://deb.debian.org/debian sid InRelease: The following signatures couldn't be verified because the public key is not available: NO_PUBKEY 762F67A0B2C39DE4": true,
		"E: The repository 'http://deb.debian.org/debian sid InRelease' is not signed.":                                                                                               true,
		"E: Failed to fetch http://deb.debian.org/debian/dists/sid/InRelease  Could not connect":                                                                                      false,
		"Reading package lists...": false,
	} {
		if got := signatureProblem(out); got != want {
			t.Errorf("signatureProblem(%q) = %v, want %v", out, got, want)
		}
	}
}
