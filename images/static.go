package images

import (
	"context"
	"fmt"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// staticImage is an image of static binaries on the base accounts, with no libraries and
// no shell: the operator, the S3 server, the NetworkPolicy engine, the Prometheus
// Operator's two programs and cert-manager's.
type staticImage struct {
	ref, component, version string
	file                    string         // the tarball's name in the cache
	bins                    []staticBinary // in the image's order
	entrypoint              string         // none: the pod names the command
	user                    string         // "uid:gid"; none runs as root
	home                    bool           // adds /home/nonroot, owned by 65532
	ports                   []string       // exposed, as "7070/tcp"
}

// staticBinary is one binary of a staticImage.
type staticBinary struct {
	key  string // names the binary in the image's inputs
	what string // names it in errors: "S3 server binary"
	src  string // on the host
	dest string // in the image
}

// staticSpec is the spec of si. Its inputs are each binary's path, size and modification
// time, so a rebuilt binary rebuilds the image; the fill checks that every binary is
// static, since the image has no libraries.
func (b *builder) staticSpec(si staticImage) (spec, error) {
	inputs := make([]string, 0, len(si.bins))
	for _, bin := range si.bins {
		fi, err := os.Stat(bin.src)
		if err != nil {
			return spec{}, fmt.Errorf("%s: %w", bin.what, err)
		}
		inputs = append(inputs, fmt.Sprintf("%s %s %d %d", bin.key, bin.src, fi.Size(), fi.ModTime().UnixNano()))
	}
	cfg := v1.Config{User: si.user, Env: []string{pathEnv}, WorkingDir: "/"}
	if si.entrypoint != "" {
		cfg.Entrypoint = []string{si.entrypoint}
	}
	if len(si.ports) > 0 {
		cfg.ExposedPorts = make(map[string]struct{}, len(si.ports))
		for _, p := range si.ports {
			cfg.ExposedPorts[p] = struct{}{}
		}
	}
	return spec{
		Image:  Image{Ref: si.ref, Tags: []string{si.ref}, Component: si.component, Version: si.version},
		file:   si.file,
		config: cfg,
		inputs: inputs,
		fill: func(_ context.Context, t tree) error {
			for _, bin := range si.bins {
				if err := checkStatic(bin.src); err != nil {
					return fmt.Errorf("%s: %w", bin.what, err)
				}
				t.file(bin.dest, bin.src, 0o755)
			}
			addBase(t, operatorAccounts)
			if si.home {
				t.dir("/home/nonroot", 0o700, 65532, 65532)
			}
			return nil
		},
	}, nil
}
