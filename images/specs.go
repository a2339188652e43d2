package images

import (
	"context"
	"fmt"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// requests are the packages asked from each dist; apt adds their
// dependency closure. Valkey 8.0 comes from bookworm-backports (Debian 12),
// 8.1 from trixie (Debian 13), 9.x, the exporter and Prometheus (the e2e monitoring
// suite's, monitoring.go) from sid.
var requests = map[string][]string{
	bookworm.name: {"valkey-server/bookworm-backports", "valkey-tools/bookworm-backports", "busybox-static"},
	trixie.name:   {"valkey-server", "valkey-tools"},
	sid.name:      {"valkey-server", "valkey-tools", "prometheus-redis-exporter", "prometheus"},
}

// valkeySources are the dists the Valkey images come from, oldest first,
// with the suite their valkey-server package is taken from.
var valkeySources = []struct {
	dist  dist
	suite string
}{
	{bookworm, "bookworm-backports"},
	{trixie, "trixie"},
	{sid, "sid"},
}

// impostorRequest is the package of the impostor image (Config.Impostor), asked from
// bookworm only when that image is built, so the other images' inputs stay the same.
const impostorRequest = "redis-server"

// ImpostorRef is the impostor image's tag: a Valkey repository and a tag that names no
// version, so that admission cannot tell it runs Redis.
const ImpostorRef = "docker.io/valkey/valkey:impostor"

// requests are the packages to resolve for this build.
func (b *builder) requests() map[string][]string {
	out := map[string][]string{}
	for d, pkgs := range requests {
		out[d] = pkgs
	}
	if b.c.Impostor {
		out[bookworm.name] = append(append([]string(nil), requests[bookworm.name]...), impostorRequest)
	}
	return out
}

// pathEnv is the PATH of every image.
const pathEnv = "PATH=/usr/local/bin:/usr/bin:/bin"

// resolve sets up every dist and resolves its packages.
func (b *builder) resolve(ctx context.Context) error {
	keyring := currentKeyring(b.c.CacheDir)
	b.repos = map[string]*repo{}
	var repos []*repo
	for _, d := range []dist{bookworm, trixie, sid} {
		r := &repo{dist: d, dir: filepath.Join(b.c.CacheDir, "debian", d.name), keyring: keyring, log: b.log}
		if err := r.setup(); err != nil {
			return err
		}
		b.repos[d.name] = r
		repos = append(repos, r)
	}
	res, err := resolveRepos(ctx, repos, b.requests(), b.c.Refresh, b.c.CacheDir)
	if err != nil {
		return fmt.Errorf("resolve Debian packages: %w", err)
	}
	b.res = res
	return nil
}

// specs returns every image to build, in manifest order.
func (b *builder) specs(ctx context.Context) ([]spec, error) {
	if err := b.resolve(ctx); err != nil {
		return nil, err
	}
	var specs []spec
	for _, v := range valkeySources {
		s, err := b.valkeySpec(v.dist.name, v.suite)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	exporter, err := b.exporterSpec()
	if err != nil {
		return nil, err
	}
	toolbox, err := b.toolboxSpec()
	if err != nil {
		return nil, err
	}
	pause, err := b.pauseSpec()
	if err != nil {
		return nil, err
	}
	specs = append(specs, exporter, toolbox, pause)
	if b.c.S3Binary != "" {
		s3, err := b.s3Spec()
		if err != nil {
			return nil, err
		}
		specs = append(specs, s3)
	}
	if b.c.NetpolBinary != "" {
		np, err := b.netpolSpec()
		if err != nil {
			return nil, err
		}
		specs = append(specs, np)
	}
	if b.c.Impostor {
		imp, err := b.impostorSpec()
		if err != nil {
			return nil, err
		}
		specs = append(specs, imp)
	}
	mon, err := b.monitoringSpecs()
	if err != nil {
		return nil, err
	}
	specs = append(specs, mon...)
	if b.c.CertManagerBinary != "" {
		cm, err := b.certManagerSpec()
		if err != nil {
			return nil, err
		}
		specs = append(specs, cm)
	}
	if len(b.c.OperatorBinaries) > 0 {
		op, err := b.operatorSpec()
		if err != nil {
			return nil, err
		}
		specs = append(specs, op)
	}
	return specs, nil
}

// pkg returns the resolved package name of dist.
func (b *builder) pkg(dist, name string) (deb, error) {
	d, ok := b.res[dist].find(name)
	if !ok {
		return deb{}, fmt.Errorf("package %s is not in the %s resolution", name, dist)
	}
	return d, nil
}

// debInputs lists the packages of the given dists, for inputs hashes.
func (b *builder) debInputs(dists ...string) []string {
	var out []string
	for _, d := range dists {
		for _, p := range b.res[d].Packages {
			out = append(out, fmt.Sprintf("%s/%s %d", d, p.File, p.Size))
		}
	}
	return out
}

// labels describes where an image's software comes from.
func labels(version, pkg, suite string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.version":  version,
		"io.valkey-operator.debian.package": pkg,
		"io.valkey-operator.debian.suite":   suite,
	}
}

// valkeySpec is the Valkey image of one dist.
func (b *builder) valkeySpec(dist, suite string) (spec, error) {
	server, err := b.pkg(dist, "valkey-server")
	if err != nil {
		return spec{}, err
	}
	version := upstreamVersion(server.Version)
	pkg := "valkey-server=" + server.Version
	repo := "docker.io/valkey/valkey:"
	return spec{
		Image: Image{
			Ref: repo + version, Tags: []string{repo + version, repo + majorMinor(version)},
			Component: ComponentValkey, Version: version, Package: pkg, Suite: suite,
		},
		file: "valkey-" + version,
		config: v1.Config{
			Cmd: []string{"valkey-server"}, WorkingDir: "/data", User: "999:999", Env: []string{pathEnv},
			ExposedPorts: map[string]struct{}{"6379/tcp": {}, "16379/tcp": {}},
			Labels:       labels(version, pkg, suite),
		},
		inputs: b.debInputs(dist, bookworm.name),
		fill: func(ctx context.Context, t tree) error {
			return b.fillValkey(ctx, t, dist, true)
		},
	}, nil
}

// impostorSpec is bookworm's redis-server (7.0) as /usr/bin/valkey-server, with the
// valkey-cli and busybox of the Valkey 8.0 image: what a user gets who runs a Redis image
// under a Valkey name. Its server says "Redis server v=7.0.15" to --version, and stops at
// the first line of valkey.conf it does not know (primaryauth) if it is ever started.
func (b *builder) impostorSpec() (spec, error) {
	d, err := b.pkg(bookworm.name, "redis-server")
	if err != nil {
		return spec{}, err
	}
	version := upstreamVersion(d.Version)
	pkg := "redis-server=" + d.Version
	return spec{
		Image: Image{Ref: ImpostorRef, Tags: []string{ImpostorRef}, Component: ComponentImpostor, Version: version, Package: pkg, Suite: bookworm.name},
		file:  "impostor-redis-" + version,
		config: v1.Config{
			Cmd: []string{"valkey-server"}, WorkingDir: "/data", User: "999:999", Env: []string{pathEnv},
			ExposedPorts: map[string]struct{}{"6379/tcp": {}, "16379/tcp": {}},
			Labels:       labels(version, pkg, bookworm.name),
		},
		inputs: b.debInputs(bookworm.name),
		fill:   b.fillImpostor,
	}, nil
}

// fillImpostor adds Redis's one binary (redis-server is a link to redis-check-rdb,
// which runs as a server under any other name) as valkey-server, to the Valkey 8.0
// image's client, busybox and accounts.
func (b *builder) fillImpostor(ctx context.Context, t tree) error {
	if err := b.fillValkey(ctx, t, bookworm.name, false); err != nil {
		return err
	}
	st, err := b.staging(ctx, bookworm.name)
	if err != nil {
		return err
	}
	if err := st.copyClosure(ctx, t, "/usr/bin/redis-check-rdb"); err != nil {
		return err
	}
	t.symlink("/usr/bin/valkey-server", "redis-check-rdb")
	t.symlink("/usr/bin/redis-server", "redis-check-rdb")
	return nil
}

// exporterSpec is the redis_exporter image, from sid.
func (b *builder) exporterSpec() (spec, error) {
	d, err := b.pkg(sid.name, "prometheus-redis-exporter")
	if err != nil {
		return spec{}, err
	}
	version := upstreamVersion(d.Version)
	pkg := "prometheus-redis-exporter=" + d.Version
	ref := "docker.io/oliver006/redis_exporter:v" + version
	return spec{
		Image: Image{Ref: ref, Tags: []string{ref}, Component: ComponentExporter, Version: version, Package: pkg, Suite: sid.name},
		file:  "redis_exporter-" + version,
		config: v1.Config{
			Entrypoint: []string{"/redis_exporter"}, User: "999:999", Env: []string{pathEnv},
			ExposedPorts: map[string]struct{}{"9121/tcp": {}},
			Labels:       labels(version, pkg, sid.name),
		},
		inputs: b.debInputs(sid.name, bookworm.name),
		fill:   b.fillExporter,
	}, nil
}

// toolboxSpec is the client image: busybox and valkey-cli 8.0 from
// bookworm-backports.
func (b *builder) toolboxSpec() (spec, error) {
	d, err := b.pkg(bookworm.name, "valkey-tools")
	if err != nil {
		return spec{}, err
	}
	version := upstreamVersion(d.Version)
	pkg := "valkey-tools=" + d.Version
	ref := "docker.io/local/toolbox:dev"
	return spec{
		Image: Image{Ref: ref, Tags: []string{ref}, Component: ComponentToolbox, Version: version, Package: pkg, Suite: "bookworm-backports"},
		file:  "toolbox",
		config: v1.Config{
			// Sleeps until stopped; exits at once on SIGTERM.
			Cmd:  []string{"sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"},
			User: "999:999", WorkingDir: "/data", Env: []string{pathEnv},
			Labels: labels(version, pkg, "bookworm-backports"),
		},
		inputs: b.debInputs(bookworm.name),
		fill: func(ctx context.Context, t tree) error {
			return b.fillValkey(ctx, t, bookworm.name, false)
		},
	}, nil
}
