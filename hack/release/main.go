// Command release builds and publishes the operator's release artifacts without Docker:
// the multi-architecture operator image (an OCI image index) and the Helm chart package's
// sources. The Makefile's image, image-push and chart-package targets call it.
//
//	release image --bins DIR --platforms linux/amd64,linux/arm64 --version V --revision R --out LAYOUT
//	release push  --layout LAYOUT --img REGISTRY/REPOSITORY:TAG [--insecure]
//	release chart --chart charts/valkey-operator --version V --img REGISTRY/REPOSITORY[:TAG] --out DIR
//	release check-chart-registry --img REGISTRY/REPOSITORY[:TAG] --registry oci://REGISTRY/PATH
//
// image reads DIR/<os>-<arch>/<binary> for each platform. push takes registry
// credentials from the docker config file ($DOCKER_CONFIG or ~/.docker/config.json) and
// trusts the system's CAs (SSL_CERT_FILE adds a private one); --insecure allows plain
// HTTP.
// chart writes a copy of the chart whose version and appVersion are V and whose default
// image is the given repository, with the tag left to the appVersion. check-chart-registry
// fails when pushing the chart to the registry path would land in the image's repository
// (both are tagged with the version: the chart would replace the image).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/valkey-operator/valkey-operator/images"
)

// source is the project's repository, for the org.opencontainers.image.source label.
const source = "https://github.com/valkey-operator/valkey-operator"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: release image|push|chart [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	bins := fs.String("bins", "bin/release", "folder of <os>-<arch>/ folders of static binaries (image)")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated platforms (image)")
	version := fs.String("version", "", "the release version (image, chart)")
	revision := fs.String("revision", "", "the commit the release is built from (image)")
	out := fs.String("out", "", "where to write (image: an OCI layout folder; chart: a folder for the chart copy)")
	layoutDir := fs.String("layout", "", "the OCI layout to push (push)")
	img := fs.String("img", "", "image reference (push: with tag; chart: the repository the chart defaults to)")
	chart := fs.String("chart", "charts/valkey-operator", "the chart's folder (chart)")
	insecure := fs.Bool("insecure", false, "allow a registry served over plain HTTP (push)")
	registry := fs.String("registry", "", "oci://<registry>/<path> the chart is pushed to (check-chart-registry)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "image":
		return buildImage(*bins, *platforms, *version, *revision, *out)
	case "push":
		return push(*layoutDir, *img, *insecure)
	case "chart":
		return prepareChart(*chart, *version, *img, *out)
	case "check-chart-registry":
		return checkChartRegistry(filepath.Base(*chart), *img, *registry)
	}
	return fmt.Errorf("unknown command %q (image, push or chart)", args[0])
}

func buildImage(bins, platforms, version, revision, out string) error {
	if version == "" || out == "" {
		return errors.New("image: --version and --out are required")
	}
	r := images.ReleaseImage{
		Binaries: map[string]map[string]string{},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "valkey-operator",
			"org.opencontainers.image.description": "The Valkey operator's controllers and webhooks, one binary each in /usr/local/bin",
			"org.opencontainers.image.source":      source,
			"org.opencontainers.image.version":     version,
			"org.opencontainers.image.revision":    revision,
			"org.opencontainers.image.licenses":    "Apache-2.0",
		},
	}
	for _, ps := range strings.Split(platforms, ",") {
		p, err := images.ParsePlatform(strings.TrimSpace(ps))
		if err != nil {
			return err
		}
		dir := filepath.Join(bins, p.OS+"-"+p.Architecture)
		entries, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("binaries of %s: %w", ps, err)
		}
		m := map[string]string{}
		for _, e := range entries {
			if !e.IsDir() {
				m[e.Name()] = filepath.Join(dir, e.Name())
			}
		}
		r.Binaries[p.OS+"/"+p.Architecture] = m
	}
	tmp, err := os.MkdirTemp("", "release-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	idx, err := images.BuildReleaseIndex(r, tmp)
	if err != nil {
		return err
	}
	if err := images.WriteLayout(out, idx); err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("image index %s (%s) written to %s\n", d, platforms, out)
	return nil
}

func push(layoutDir, img string, insecure bool) error {
	if layoutDir == "" || img == "" {
		return errors.New("push: --layout and --img are required")
	}
	idx, err := images.ReadLayout(layoutDir)
	if err != nil {
		return err
	}
	d, err := images.PushIndex(img, idx, insecure)
	if err != nil {
		return err
	}
	fmt.Printf("pushed %s@%s\n", img, d)
	return nil
}

// checkChartRegistry refuses a chart destination whose chart repository is the image's.
func checkChartRegistry(chartName, img, registry string) error {
	if !strings.HasPrefix(registry, "oci://") {
		return fmt.Errorf("registry %q: want oci://<registry>/<path>", registry)
	}
	imgRef, err := name.ParseReference(img)
	if err != nil {
		return fmt.Errorf("image %q: %w", img, err)
	}
	chartRepo, err := name.NewRepository(strings.TrimSuffix(strings.TrimPrefix(registry, "oci://"), "/") + "/" + chartName)
	if err != nil {
		return fmt.Errorf("registry %q: %w", registry, err)
	}
	if chartRepo.Name() == imgRef.Context().Name() {
		return fmt.Errorf("the chart would be pushed to %s, the image's repository, and replace the image's tag: "+
			"push it under another path (for example REGISTRY=%s/charts)", chartRepo.Name(), strings.TrimSuffix(registry, "/"))
	}
	return nil
}

// prepareChart copies the chart to out/<chart name> with the release's version and image.
func prepareChart(chartDir, version, img, out string) error {
	if version == "" || img == "" || out == "" {
		return errors.New("chart: --version, --img and --out are required")
	}
	ref, err := name.ParseReference(img)
	if err != nil {
		return fmt.Errorf("chart: image %q: %w", img, err)
	}
	repo := ref.Context()
	dst := filepath.Join(out, filepath.Base(chartDir))
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := os.CopyFS(dst, os.DirFS(chartDir)); err != nil {
		return fmt.Errorf("copy the chart: %w", err)
	}
	if err := setChartVersion(filepath.Join(dst, "Chart.yaml"), version); err != nil {
		return err
	}
	if err := setValuesImage(filepath.Join(dst, "values.yaml"), repo.RegistryStr(), repo.RepositoryStr()); err != nil {
		return err
	}
	fmt.Printf("chart %s %s (image %s, tag %s) in %s\n", filepath.Base(chartDir), version, repo.Name(), version, dst)
	return nil
}
