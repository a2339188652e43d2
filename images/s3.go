package images

// S3Ref is the tag of the S3-compatible server image: versitygw (a Go module, built
// static by hack/deps.sh) serving a directory, for the backup suites and benchmarks.
const S3Ref = "docker.io/local/versitygw:dev"

// s3Spec is the S3 server image: the versitygw binary as /usr/local/bin/versitygw, run
// as nonroot (65532).
func (b *builder) s3Spec() (spec, error) {
	return b.staticSpec(staticImage{
		ref: S3Ref, component: ComponentS3, version: "dev", file: "versitygw",
		bins: []staticBinary{{
			key: "versitygw", what: "S3 server binary",
			src: b.c.S3Binary, dest: "/usr/local/bin/versitygw",
		}},
		entrypoint: "/usr/local/bin/versitygw",
		user:       "65532:65532",
		home:       true,
		ports:      []string{"7070/tcp"},
	})
}
