// Module release is the release tool the Makefile's image, image-push and chart-package
// targets run: it builds and publishes the operator's image and prepares the chart.
module github.com/valkey-operator/valkey-operator/hack/release

go 1.26.0

replace github.com/valkey-operator/valkey-operator/images => ../../images

require (
	github.com/google/go-containerregistry v0.22.1
	github.com/valkey-operator/valkey-operator/images v0.2.0
)

require (
	github.com/docker/cli v29.7.2+incompatible // indirect
	github.com/docker/docker-credential-helpers v0.9.3 // indirect
	github.com/klauspost/compress v1.20.1 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
	github.com/sirupsen/logrus v1.9.4 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
