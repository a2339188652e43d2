package images

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// keyringPath is where a keyring fetched from a verified suite is kept.
func keyringPath(cacheDir string) string {
	return filepath.Join(cacheDir, "debian", "keyring", "debian-archive-keyring.gpg")
}

// currentKeyring returns the fetched keyring if an earlier build needed one,
// else the host's.
func currentKeyring(cacheDir string) string {
	if _, err := os.Stat(keyringPath(cacheDir)); err == nil {
		return keyringPath(cacheDir)
	}
	return HostKeyring
}

// fetchKeyring downloads the package debian-archive-keyring through the
// repo from, whose lists were verified with the current keyring (so the
// .deb is verified by their signed hashes), and installs its archive keyring
// as keyringPath. Later builds use it for every suite.
func fetchKeyring(ctx context.Context, from *repo, cacheDir string) error {
	work := filepath.Join(from.dir, "keyring")
	if err := os.RemoveAll(work); err != nil {
		return fmt.Errorf("fetch keyring: %w", err)
	}
	defer os.RemoveAll(work)
	res, err := from.download(ctx, []string{"debian-archive-keyring"})
	if err != nil {
		return fmt.Errorf("fetch keyring from %s: %w", from.name, err)
	}
	d, ok := res.find("debian-archive-keyring")
	if !ok {
		return fmt.Errorf("fetch keyring from %s: package not downloaded", from.name)
	}
	root, err := newStaging(work)
	if err != nil {
		return fmt.Errorf("fetch keyring: %w", err)
	}
	if err := extractDeb(ctx, from.path(d), root, nil); err != nil {
		return fmt.Errorf("fetch keyring: %w", err)
	}
	src, err := findKeyring(root)
	if err != nil {
		return fmt.Errorf("fetch keyring from %s: %w", d.File, err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("fetch keyring: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(keyringPath(cacheDir)), 0o755); err != nil {
		return fmt.Errorf("fetch keyring: %w", err)
	}
	if err := writeIfChanged(keyringPath(cacheDir), data); err != nil {
		return fmt.Errorf("fetch keyring: %w", err)
	}
	from.log("keyring: using %s from %s (%s)", filepath.Base(src), d.File, from.name)
	return nil
}

// findKeyring returns the archive keyring inside an extracted
// debian-archive-keyring package (.gpg in Debian 12, .pgp later).
func findKeyring(root rootFS) (string, error) {
	for _, name := range []string{"debian-archive-keyring.pgp", "debian-archive-keyring.gpg"} {
		p := root.host("/usr/share/keyrings/" + name)
		if fi, err := os.Stat(p); err == nil && fi.Size() > 0 {
			return p, nil
		}
	}
	return "", errors.New("no debian-archive-keyring.{pgp,gpg} in /usr/share/keyrings")
}

// resolveRepos resolves every request. A suite whose lists cannot be
// verified with the current keyring gets a second chance with the archive
// keyring of the newest suite that could be verified; no suite is ever
// trusted without a signature.
func resolveRepos(ctx context.Context, repos []*repo, requests map[string][]string, refresh bool, cacheDir string) (map[string]resolution, error) {
	out := map[string]resolution{}
	var unsigned []*repo
	var verified *repo
	for _, r := range repos {
		res, err := r.resolve(ctx, requests[r.name], refresh)
		if errors.Is(err, errSignature) && r.keyring != keyringPath(cacheDir) {
			r.log("%s: %v", r.name, firstLine(err))
			unsigned = append(unsigned, r)
			continue
		}
		if err != nil {
			return nil, err
		}
		out[r.name] = res
		verified = r // repos are ordered oldest first
	}
	if len(unsigned) == 0 {
		return out, nil
	}
	if verified == nil {
		return nil, fmt.Errorf("no Debian suite could be verified with %s", repos[0].keyring)
	}
	if err := fetchKeyring(ctx, verified, cacheDir); err != nil {
		return nil, err
	}
	for _, r := range unsigned {
		r.keyring = keyringPath(cacheDir)
		if err := r.setup(); err != nil {
			return nil, err
		}
		res, err := r.resolve(ctx, requests[r.name], true)
		if err != nil {
			return nil, fmt.Errorf("%s with keyring from %s: %w", r.name, verified.name, err)
		}
		out[r.name] = res
	}
	return out, nil
}

// debNames returns the package names of request ("valkey-server/sid" ->
// "valkey-server").
func debNames(request []string) []string {
	out := make([]string, 0, len(request))
	for _, r := range request {
		n, _, _ := strings.Cut(r, "/")
		n, _, _ = strings.Cut(n, "=")
		out = append(out, n)
	}
	return out
}
