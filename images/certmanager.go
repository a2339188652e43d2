package images

// ComponentCertManager is the image of cert-manager's program (localkube build
// --certmanager makes it from the Go module proxy, hack/certmanager), whose commands
// controller, cainjector and webhook run its three components. It is built only when
// Config.CertManagerBinary names the program, so the other suites' nodes do not load it.
const ComponentCertManager = "cert-manager"

// certManagerPath is the program's path in its image, the image's entrypoint.
const certManagerPath = "/usr/local/bin/cert-manager"

// certManagerSpec is the image of Config.CertManagerBinary, run as nobody (as the
// monitoring suite's programs).
func (b *builder) certManagerSpec() (spec, error) {
	version := b.c.CertManagerVersion
	if version == "" {
		version = "dev"
	}
	return b.staticSpec(staticImage{
		ref: "docker.io/local/" + ComponentCertManager + ":" + version, component: ComponentCertManager, version: version,
		file:       ComponentCertManager,
		bins:       []staticBinary{{key: ComponentCertManager, what: "cert-manager binary", src: b.c.CertManagerBinary, dest: certManagerPath}},
		entrypoint: certManagerPath,
		user:       "65534:65534",
	})
}
