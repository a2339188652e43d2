package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/valkey-operator/valkey-operator/images"
	"github.com/valkey-operator/valkey-operator/localkube"
)

// defaultOperatorImage is the operator image's reference unless --operator-image names one
// (the Makefile names the one the chart defaults to: valkey-operator:<VERSION>).
const defaultOperatorImage = images.DefaultOperatorRef

// buildImages builds every image into the cache; with binDir, the operator image too,
// with s3Binary the S3 server image, and with impostor the impostor image; the
// Prometheus Operator's and cert-manager's once localkube build made their programs. When
// the cluster runs, images that changed are imported into its nodes.
func buildImages(ctx context.Context, cfg localkube.Config, binDir, ref, s3Binary string, impostor bool) error {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return err
	}
	ic := images.Config{CacheDir: cfg.CacheDir, OperatorRef: ref, S3Binary: s3Binary, Impostor: impostor, Log: cfg.Log}
	if _, err := os.Stat(cfg.NetpolBinary()); err == nil {
		ic.NetpolBinary = cfg.NetpolBinary()
	}
	mon := map[string]string{}
	for name := range localkube.MonitoringCommands {
		if p := filepath.Join(cfg.MonitoringDir(), "bin", name); fileExists(p) {
			mon[name] = p
		}
	}
	if len(mon) == len(localkube.MonitoringCommands) {
		ic.MonitoringBinaries, ic.MonitoringVersion = mon, localkube.PrometheusOperatorVersion
	}
	if fileExists(cfg.CertManagerBinary()) {
		ic.CertManagerBinary, ic.CertManagerVersion = cfg.CertManagerBinary(), localkube.CertManagerVersion
	}
	if binDir != "" {
		entries, err := os.ReadDir(binDir)
		if err != nil {
			return fmt.Errorf("operator binaries: %w", err)
		}
		ic.OperatorBinaries = map[string]string{}
		for _, e := range entries {
			if !e.IsDir() {
				ic.OperatorBinaries[e.Name()] = filepath.Join(binDir, e.Name())
			}
		}
	}
	m, err := images.Build(ctx, ic)
	if err != nil {
		return err
	}
	for _, img := range m.Images {
		cfg.Log("image %s (%s)", img.Ref, img.File)
	}
	if _, err := cfg.Status(ctx); err != nil {
		return nil
	}
	var files []string
	for _, img := range m.Images {
		files = append(files, img.File)
	}
	return localkube.LoadImages(ctx, cfg, files)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// listImages prints the image tarballs of the manifest, one per line.
func listImages(cfg localkube.Config) error {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return err
	}
	m, err := images.ReadManifest(cfg.CacheDir)
	if err != nil {
		return err
	}
	for _, f := range m.Files() {
		fmt.Println(f)
	}
	return nil
}

// valkeyServers unpacks the server of every Valkey image into dir and prints them as
// JSON (images.ValkeyServer), for the measurement of their configuration keys.
func valkeyServers(ctx context.Context, cfg localkube.Config, dir string) error {
	if dir == "" {
		return errors.New("valkey-servers: -out DIR is required")
	}
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return err
	}
	servers, err := images.StageValkeyServers(ctx, images.Config{CacheDir: cfg.CacheDir, Log: cfg.Log}, dir)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(servers)
}
