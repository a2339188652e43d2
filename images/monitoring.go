package images

import (
	"context"
	"fmt"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The images of the e2e monitoring suite: the Prometheus Operator and its config reloader
// (static binaries that localkube build --monitoring makes from the Go module proxy), and
// Prometheus from Debian's package. They are built only when Config.MonitoringBinaries
// names the two binaries, so the other suites' nodes do not load them.
const (
	ComponentPrometheusOperator = "prometheus-operator"
	ComponentConfigReloader     = "prometheus-config-reloader"
	ComponentPrometheus         = "prometheus"
)

// monitoringBinaries are the Config.MonitoringBinaries keys, with the path each binary has
// in its image: the Prometheus Operator starts the reloader as
// /bin/prometheus-config-reloader, the operator's image runs /bin/operator.
var monitoringBinaries = map[string]string{
	ComponentPrometheusOperator: "/bin/operator",
	ComponentConfigReloader:     "/bin/prometheus-config-reloader",
}

// monitoringSpecs are the three images, or none without the binaries.
func (b *builder) monitoringSpecs() ([]spec, error) {
	if len(b.c.MonitoringBinaries) == 0 {
		return nil, nil
	}
	var specs []spec
	names := make([]string, 0, len(monitoringBinaries))
	for n := range monitoringBinaries {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		s, err := b.monitoringBinarySpec(n, monitoringBinaries[n])
		if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	p, err := b.prometheusSpec()
	if err != nil {
		return nil, err
	}
	return append(specs, p), nil
}

// monitoringBinarySpec is the image of one static binary of Config.MonitoringBinaries,
// run as nobody (the Prometheus Operator's pods run as 65534).
func (b *builder) monitoringBinarySpec(component, dest string) (spec, error) {
	src, ok := b.c.MonitoringBinaries[component]
	if !ok {
		return spec{}, fmt.Errorf("monitoring images: no %s binary", component)
	}
	version := b.c.MonitoringVersion
	if version == "" {
		version = "dev"
	}
	return b.staticSpec(staticImage{
		ref: "docker.io/local/" + component + ":" + version, component: component, version: version, file: component,
		bins:       []staticBinary{{key: component, what: component + " binary", src: src, dest: dest}},
		entrypoint: dest,
		user:       "65534:65534",
	})
}

// prometheusSpec is Prometheus from Debian sid's package (the Prometheus Operator needs
// 2.45 or later; bookworm has 2.42), with busybox for a shell. The Prometheus Operator
// passes only arguments, so the entrypoint is the server.
func (b *builder) prometheusSpec() (spec, error) {
	d, err := b.pkg(sid.name, "prometheus")
	if err != nil {
		return spec{}, err
	}
	version := upstreamVersion(d.Version)
	pkg := "prometheus=" + d.Version
	ref := "docker.io/local/prometheus:v" + version
	return spec{
		Image: Image{Ref: ref, Tags: []string{ref}, Component: ComponentPrometheus, Version: version, Package: pkg, Suite: sid.name},
		file:  "prometheus-" + version,
		config: v1.Config{
			Entrypoint: []string{"/usr/bin/prometheus"}, User: "65534:65534", Env: []string{pathEnv}, WorkingDir: "/prometheus",
			ExposedPorts: map[string]struct{}{"9090/tcp": {}},
			Labels:       labels(version, pkg, sid.name),
		},
		inputs: b.debInputs(sid.name, bookworm.name),
		fill: func(ctx context.Context, t tree) error {
			st, err := b.staging(ctx, sid.name)
			if err != nil {
				return err
			}
			if err := st.copyClosure(ctx, t, "/usr/bin/prometheus", "/usr/bin/promtool"); err != nil {
				return err
			}
			if err := b.addBusybox(ctx, t); err != nil {
				return err
			}
			t.dir("/prometheus", 0o777, 65534, 65534)
			t.dir("/etc/prometheus", 0o755, 0, 0)
			addBase(t, operatorAccounts)
			return nil
		},
	}, nil
}
