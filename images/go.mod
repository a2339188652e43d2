// Module images builds container images without Docker: the images of the suites and of
// the local Kubernetes from Debian's packages, and the operator's release image (an OCI
// image index). The local Kubernetes, the e2e suites and the release tool use it; no
// operator module does.
module github.com/valkey-operator/valkey-operator/images

go 1.26.0

require github.com/google/go-containerregistry v0.22.1

require (
	github.com/docker/cli v29.7.2+incompatible // indirect
	github.com/docker/docker-credential-helpers v0.9.3 // indirect
	github.com/klauspost/compress v1.20.1 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
	github.com/sirupsen/logrus v1.9.4 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	gotest.tools/v3 v3.5.2 // indirect
)
