package images

import (
	"bufio"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// imagesModule is the module whose cmd/pause is built for the pause image: this one.
const imagesModule = "github.com/valkey-operator/valkey-operator/images"

// PauseRef is the pause image's tag (the sandbox image of the CRI config).
const PauseRef = "registry.k8s.io/pause:3.10"

// pauseSpec is the pause image: the static Go program of images/cmd/pause.
func (b *builder) pauseSpec() (spec, error) {
	src, err := b.pauseSource()
	if err != nil {
		return spec{}, err
	}
	sum, err := hashGoFiles(src)
	if err != nil {
		return spec{}, err
	}
	bin := filepath.Join(b.dir, "bin", "pause")
	return spec{
		Image: Image{Ref: PauseRef, Tags: []string{PauseRef}, Component: ComponentPause, Version: "3.10"},
		file:  "pause-3.10",
		config: v1.Config{
			Entrypoint: []string{"/pause"}, User: "65535:65535",
			Labels: map[string]string{"org.opencontainers.image.version": "3.10"},
		},
		inputs: []string{runtime.Version(), "cmd/pause " + sum},
		fill: func(ctx context.Context, t tree) error {
			if err := goBuild(ctx, src, bin); err != nil {
				return err
			}
			t.file("/pause", bin, 0o755)
			return nil
		},
	}, nil
}

// pauseSource returns the directory of the pause program: ModuleDir/cmd/pause,
// ModuleDir defaulting to the images module found from the working directory.
func (b *builder) pauseSource() (string, error) {
	dir := b.c.ModuleDir
	if dir == "" {
		var err error
		if dir, err = findModuleDir(); err != nil {
			return "", err
		}
	}
	src := filepath.Join(dir, "cmd", "pause")
	if _, err := os.Stat(filepath.Join(src, "main.go")); err != nil {
		return "", fmt.Errorf("pause source: %w", err)
	}
	return src, nil
}

// findModuleDir looks for the images module in the working directory, its
// parents, and their images/ subdirectories.
func findModuleDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find module %s: %w", imagesModule, err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		for _, cand := range []string{dir, filepath.Join(dir, "images")} {
			if modulePath(filepath.Join(cand, "go.mod")) == imagesModule {
				return cand, nil
			}
		}
		if dir == filepath.Dir(dir) {
			return "", fmt.Errorf("module %s not found above %s: set Config.ModuleDir", imagesModule, wd)
		}
	}
}

// modulePath returns the module path declared in a go.mod, or "".
func modulePath(gomod string) string {
	f, err := os.Open(gomod)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// hashGoFiles hashes the non-test Go files of dir.
func hashGoFiles(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return "", fmt.Errorf("hash %s: %w", dir, err)
	}
	h := sha256.New()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("hash %s: %w", dir, err)
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// goBuild builds the main package in dir as a static linux/amd64 binary.
func goBuild(ctx context.Context, dir, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOWORK=off")
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", dir, err, output)
	}
	return nil
}

// operatorSpec is the operator image: the given static binaries under
// /usr/local/bin, run as nonroot (65532).
func (b *builder) operatorSpec() (spec, error) {
	ref := b.c.OperatorRef
	if ref == "" {
		ref = DefaultOperatorRef
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return spec{}, fmt.Errorf("operator image: %w", err)
	}
	names := make([]string, 0, len(b.c.OperatorBinaries))
	for n := range b.c.OperatorBinaries {
		names = append(names, n)
	}
	slices.Sort(names)
	si := staticImage{
		ref: ref, component: ComponentOperator, version: tag.TagStr(), file: "operator",
		user: "65532:65532",
		home: true,
	}
	for _, n := range names {
		si.bins = append(si.bins, staticBinary{
			key: n, what: "operator binary " + n, src: b.c.OperatorBinaries[n], dest: "/usr/local/bin/" + n,
		})
	}
	if len(names) == 1 {
		si.entrypoint = "/usr/local/bin/" + names[0]
	}
	return b.staticSpec(si)
}

// checkStatic fails unless p is an ELF executable without an interpreter
// (the operator image has no libraries).
func checkStatic(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return errors.New("dynamically linked (build it with CGO_ENABLED=0)")
		}
	}
	return nil
}

// Import imports docker-archive tarballs into the k8s.io namespace of one
// containerd (`ctr -a ADDRESS -n k8s.io images import FILE`), where the
// kubelet's CRI finds them; the images are unpacked for the default
// snapshotter.
func Import(ctx context.Context, ctrBinary, containerdAddress string, files []string) error {
	if ctrBinary == "" {
		ctrBinary = "ctr"
	}
	for _, f := range files {
		cmd := exec.CommandContext(ctx, ctrBinary, "-a", containerdAddress, "-n", "k8s.io", "images", "import", f)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("import %s into %s: %w\n%s", f, containerdAddress, err, out)
		}
	}
	return nil
}
