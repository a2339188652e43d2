package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/valkey-operator/valkey-operator/localkube"
	"github.com/valkey-operator/valkey-operator/localkube/kindnode"
)

// kindImage builds the kind node image (localkube/kindnode), writes it to out when
// given, and loads it into the Docker engine when load is set and the engine lacks it.
func kindImage(ctx context.Context, cfg localkube.Config, out string, load bool) error {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return err
	}
	kc := kindnode.Config{CacheDir: cfg.CacheDir, RepoRoot: cfg.RepoRoot, Mirror: os.Getenv("KIND_IMAGE_MIRROR"), Log: cfg.Log}
	img, err := kindnode.Build(ctx, kc)
	if err != nil {
		return err
	}
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		if err := kindnode.WriteArchive(kc, img, f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		cfg.Log("wrote %s", out)
	}
	if !load {
		return nil
	}
	start := time.Now()
	loaded, err := kindnode.Load(ctx, kc, img)
	if err != nil {
		return err
	}
	if loaded {
		cfg.Log("loaded %s into Docker in %s", img.Ref, time.Since(start).Round(100*time.Millisecond))
	} else {
		cfg.Log("Docker has %s (%s)", img.Ref, img.ID)
	}
	fmt.Println(img.Ref)
	return nil
}
