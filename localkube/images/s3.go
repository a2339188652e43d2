package images

import (
	"context"
	"fmt"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// S3Ref is the tag of the S3-compatible server image: versitygw (a Go module, built
// static by hack/deps.sh) serving a directory, for the backup suites and benchmarks.
const S3Ref = "docker.io/local/versitygw:dev"

// s3Spec is the S3 server image: the versitygw binary as /usr/local/bin/versitygw, run
// as nonroot (65532).
func (b *builder) s3Spec() (spec, error) {
	fi, err := os.Stat(b.c.S3Binary)
	if err != nil {
		return spec{}, fmt.Errorf("S3 server binary: %w", err)
	}
	return spec{
		Image: Image{Ref: S3Ref, Tags: []string{S3Ref}, Component: ComponentS3, Version: "dev"},
		file:  "versitygw",
		config: v1.Config{
			Entrypoint: []string{"/usr/local/bin/versitygw"}, User: "65532:65532", Env: []string{pathEnv}, WorkingDir: "/",
			ExposedPorts: map[string]struct{}{"7070/tcp": {}},
		},
		inputs: []string{fmt.Sprintf("versitygw %s %d %d", b.c.S3Binary, fi.Size(), fi.ModTime().UnixNano())},
		fill: func(_ context.Context, t tree) error {
			if err := checkStatic(b.c.S3Binary); err != nil {
				return fmt.Errorf("S3 server binary: %w", err)
			}
			t.file("/usr/local/bin/versitygw", b.c.S3Binary, 0o755)
			addBase(t, operatorAccounts)
			t.dir("/home/nonroot", 0o700, 65532, 65532)
			return nil
		},
	}, nil
}
