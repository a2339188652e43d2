package images

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Mirror is the Debian archive every suite is downloaded from.
const Mirror = "http://deb.debian.org"

// HostKeyring is the keyring the package lists are verified with unless a
// newer one had to be fetched (see keyring.go).
const HostKeyring = "/usr/share/keyrings/debian-archive-keyring.gpg"

// source is one line of a sources.list.
type source struct {
	path  string // under Mirror: "debian" or "debian-security"
	suite string
}

// dist is a self-contained Debian package universe: one release and its
// update, security and backports suites, with its own package lists, .deb
// cache and an empty dpkg status, all under CacheDir/debian/<name>/.
type dist struct {
	name    string
	sources []source
}

var (
	bookworm = dist{name: "bookworm", sources: []source{
		{"debian", "bookworm"}, {"debian", "bookworm-updates"},
		{"debian", "bookworm-backports"}, {"debian-security", "bookworm-security"},
	}}
	trixie = dist{name: "trixie", sources: []source{
		{"debian", "trixie"}, {"debian", "trixie-updates"}, {"debian-security", "trixie-security"},
	}}
	sid = dist{name: "sid", sources: []source{{"debian", "sid"}}}
)

// repo is a dist set up under a cache directory.
type repo struct {
	dist
	dir     string // CacheDir/debian/<name>
	keyring string
	log     func(string, ...any)
}

// deb is one downloaded package of a resolution.
type deb struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Release string `json:"release"` // e.g. "Debian Backports:bookworm-backports"
	File    string `json:"file"`    // base name under cache/archives
	Size    int64  `json:"size"`
}

// resolution is the dependency closure of a request, downloaded; it is
// stored as resolved.json so that a warm build needs no apt at all.
type resolution struct {
	Request  []string `json:"request"`
	Packages []deb    `json:"packages"`
}

// archives returns the directory holding the downloaded .deb files.
func (r *repo) archives() string { return filepath.Join(r.dir, "cache", "archives") }

// path returns the host path of a downloaded package.
func (r *repo) path(d deb) string { return filepath.Join(r.archives(), d.File) }

// find returns the package called name.
func (res resolution) find(name string) (deb, bool) {
	for _, d := range res.Packages {
		if d.Name == name {
			return d, true
		}
	}
	return deb{}, false
}

// setup writes the repo's private apt configuration and directories. apt
// reads nothing of the host's configuration (APT_CONFIG points to it and it
// points Dir::Etc::parts to an empty directory).
func (r *repo) setup() error {
	for _, d := range []string{"apt.conf.d", "state/lists/partial", "state/updates", "cache/archives/partial"} {
		if err := os.MkdirAll(filepath.Join(r.dir, d), 0o755); err != nil {
			return fmt.Errorf("set up %s: %w", r.name, err)
		}
	}
	status := filepath.Join(r.dir, "state", "status")
	if err := os.WriteFile(status, nil, 0o644); err != nil {
		return fmt.Errorf("set up %s: %w", r.name, err)
	}
	files := map[string]string{"sources.list": r.sourcesList(), "apt.conf": r.aptConf()}
	for name, content := range files {
		if err := writeIfChanged(filepath.Join(r.dir, name), []byte(content)); err != nil {
			return fmt.Errorf("set up %s: %w", r.name, err)
		}
	}
	return nil
}

// sourcesList returns the repo's sources.list: signed-by its keyring,
// amd64 only. Signature checking stays on (no trusted=yes).
func (r *repo) sourcesList() string {
	var b strings.Builder
	for _, s := range r.sources {
		fmt.Fprintf(&b, "deb [signed-by=%s arch=amd64] %s/%s %s main\n", r.keyring, Mirror, s.path, s.suite)
	}
	return b.String()
}

// aptConf returns the repo's apt.conf. Check-Valid-Until is off because
// mirrors can serve a snapshot whose Release is past its Valid-Until (the
// sid mirror here is); signatures and hashes are still verified.
func (r *repo) aptConf() string {
	d := r.dir
	lines := []string{
		`Dir::Etc::main "` + d + `/apt.conf.none";`,
		`Dir::Etc::parts "` + d + `/apt.conf.d";`,
		`Dir::Etc::sourcelist "` + d + `/sources.list";`,
		`Dir::Etc::sourceparts "-";`,
		`Dir::Etc::preferences "` + d + `/preferences.none";`,
		`Dir::Etc::preferencesparts "` + d + `/apt.conf.d";`,
		`Dir::Etc::trusted "` + d + `/trusted.none";`,
		`Dir::Etc::trustedparts "` + d + `/apt.conf.d";`,
		`Dir::State "` + d + `/state";`,
		`Dir::State::status "` + d + `/state/status";`,
		`Dir::Cache "` + d + `/cache";`,
		`Dir::Log "` + d + `/log";`,
		`APT::Architecture "amd64";`,
		`APT::Architectures { "amd64"; };`,
		`APT::Install-Recommends "false";`,
		`APT::Install-Suggests "false";`,
		`APT::Sandbox::User "root";`,
		`Acquire::Languages "none";`,
		`Acquire::Retries "3";`,
		`Acquire::Check-Valid-Until "false";`,
		`Binary::apt-get::Acquire::AllowInsecureRepositories "false";`,
	}
	return strings.Join(lines, "\n") + "\n"
}

// apt runs apt-get (or apt-cache) with the repo's configuration.
func (r *repo) apt(ctx context.Context, tool string, args ...string) (string, error) {
	r.log("%s: %s %s", r.name, tool, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Env = append(os.Environ(), "APT_CONFIG="+filepath.Join(r.dir, "apt.conf"), "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", tool, strings.Join(args, " "), err, tail(string(out), 20))
	}
	return string(out), nil
}

// update downloads the package lists. apt fails when a list's signature
// cannot be verified; that failure is reported as errSignature so that the
// caller can retry with a newer keyring. (A warning about a second,
// unknown signature next to a good one is not a failure.)
func (r *repo) update(ctx context.Context) error {
	out, err := r.apt(ctx, "apt-get", "update")
	if err != nil && signatureProblem(out) {
		return fmt.Errorf("update %s: %w: %w", r.name, errSignature, err)
	}
	if err != nil {
		return fmt.Errorf("update %s: %w", r.name, err)
	}
	return nil
}

// errSignature marks a package list whose signature could not be verified.
var errSignature = errors.New("package list signature not verified")

// signatureProblem reports whether apt output shows a signature that could
// not be verified.
func signatureProblem(out string) bool {
	for _, s := range []string{"NO_PUBKEY", "EXPKEYSIG", "REVKEYSIG", "BADSIG", "is not signed", "GPG error"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

// hasLists reports whether the package lists were downloaded.
func (r *repo) hasLists() bool {
	m, _ := filepath.Glob(filepath.Join(r.dir, "state", "lists", "*_Packages*"))
	return len(m) > 0
}

// resolvedPath is where the last resolution of the repo is stored.
func (r *repo) resolvedPath() string { return filepath.Join(r.dir, "resolved.json") }

// cached returns the stored resolution when it answers request and all its
// files are present with the recorded size.
func (r *repo) cached(request []string) (resolution, bool) {
	var res resolution
	data, err := os.ReadFile(r.resolvedPath())
	if err != nil || json.Unmarshal(data, &res) != nil || !slices.Equal(res.Request, request) {
		return resolution{}, false
	}
	for _, d := range res.Packages {
		fi, err := os.Stat(r.path(d))
		if err != nil || fi.Size() != d.Size {
			return resolution{}, false
		}
	}
	return res, true
}

// resolve returns the downloaded dependency closure of request (apt-get
// package arguments such as "valkey-server/bookworm-backports"). Without
// refresh it reuses the stored resolution when its files are present;
// otherwise it downloads with the current package lists and updates them
// first only when they are missing, forced, or the download fails.
func (r *repo) resolve(ctx context.Context, request []string, refresh bool) (resolution, error) {
	if !refresh {
		if res, ok := r.cached(request); ok {
			return res, nil
		}
	}
	updated := false
	if refresh || !r.hasLists() {
		if err := r.update(ctx); err != nil {
			return resolution{}, err
		}
		updated = true
	}
	res, err := r.download(ctx, request)
	if err != nil && !updated {
		r.log("%s: %v; updating the package lists", r.name, firstLine(err))
		if err := r.update(ctx); err != nil {
			return resolution{}, err
		}
		res, err = r.download(ctx, request)
	}
	if err != nil {
		return resolution{}, err
	}
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return resolution{}, fmt.Errorf("store resolution of %s: %w", r.name, err)
	}
	if err := writeIfChanged(r.resolvedPath(), data); err != nil {
		return resolution{}, fmt.Errorf("store resolution of %s: %w", r.name, err)
	}
	if err := r.prune(res); err != nil {
		return resolution{}, err
	}
	return res, nil
}

// prune removes the downloaded packages that res does not use (versions
// replaced by a refresh).
func (r *repo) prune(res resolution) error {
	keep := map[string]bool{}
	for _, d := range res.Packages {
		keep[d.File] = true
	}
	files, err := filepath.Glob(filepath.Join(r.archives(), "*.deb"))
	if err != nil {
		return fmt.Errorf("prune %s: %w", r.name, err)
	}
	for _, f := range files {
		if keep[filepath.Base(f)] {
			continue
		}
		if err := os.Remove(f); err != nil {
			return fmt.Errorf("prune %s: %w", r.name, err)
		}
	}
	return nil
}

// download fetches the closure of request (hash-checked by apt against the
// signed lists) and lists it with a simulated install against the empty
// dpkg status.
func (r *repo) download(ctx context.Context, request []string) (resolution, error) {
	args := append([]string{"install", "--download-only", "-y", "-q"}, request...)
	if _, err := r.apt(ctx, "apt-get", args...); err != nil {
		return resolution{}, fmt.Errorf("download %s: %w", r.name, err)
	}
	out, err := r.apt(ctx, "apt-get", append([]string{"install", "-s", "-q"}, request...)...)
	if err != nil {
		return resolution{}, fmt.Errorf("list %s: %w", r.name, err)
	}
	res := resolution{Request: request}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		d, ok := parseInst(sc.Text())
		if !ok {
			continue
		}
		fi, err := os.Stat(r.path(d))
		if err != nil {
			return resolution{}, fmt.Errorf("list %s: %w", r.name, err)
		}
		d.Size = fi.Size()
		res.Packages = append(res.Packages, d)
	}
	if len(res.Packages) == 0 {
		return resolution{}, fmt.Errorf("list %s: no package in apt-get -s output:\n%s", r.name, tail(out, 20))
	}
	return res, nil
}

// instLine matches "Inst libc6 (2.36-9+deb12u13 Debian:12.12/stable [amd64])".
var instLine = regexp.MustCompile(`^Inst (\S+) \((\S+) (.*) \[(\S+)\]\)`)

// parseInst parses one line of apt-get -s install output.
func parseInst(line string) (deb, bool) {
	m := instLine.FindStringSubmatch(line)
	if m == nil {
		return deb{}, false
	}
	name, version, release, arch := m[1], m[2], m[3], m[4]
	file := fmt.Sprintf("%s_%s_%s.deb", name, strings.ReplaceAll(version, ":", "%3a"), arch)
	return deb{Name: name, Version: version, Release: release, File: file}, true
}

// writeIfChanged writes data to p unless p already holds exactly data.
func writeIfChanged(p string, data []byte) error {
	old, err := os.ReadFile(p)
	if err == nil && string(old) == string(data) {
		return nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// firstLine returns the first line of err's message.
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
