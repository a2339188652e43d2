package images

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// staging is a dist's packages unpacked into one usr-merged tree, from
// which images copy the files they need.
type staging struct {
	root      rootFS
	repo      *repo
	res       resolution
	extracted map[string]bool // package names
}

// staging returns the staging tree of the named dist, unpacking on first
// use the requested packages and every lib* package of the closure (the
// other packages, such as adduser or systemd, are unpacked only if a
// library cannot be found without them).
func (b *builder) staging(ctx context.Context, dist string) (*staging, error) {
	if s, ok := b.stagings[dist]; ok {
		return s, nil
	}
	r := b.repos[dist]
	dir := filepath.Join(r.dir, "staging")
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("stage %s: %w", dist, err)
	}
	root, err := newStaging(dir)
	if err != nil {
		return nil, err
	}
	s := &staging{root: root, repo: r, res: b.res[dist], extracted: map[string]bool{}}
	b.stagings[dist] = s
	requested := debNames(s.res.Request)
	start := time.Now()
	err = s.extract(ctx, func(d deb) bool {
		return slices.Contains(requested, d.Name) || strings.HasPrefix(d.Name, "lib")
	})
	if err != nil {
		return nil, err
	}
	b.log("images: staged %s (%d packages) in %s", dist, len(s.extracted), time.Since(start).Round(time.Millisecond))
	return s, nil
}

// extract unpacks the packages selected by want that are not unpacked yet.
func (s *staging) extract(ctx context.Context, want func(deb) bool) error {
	for _, d := range s.res.Packages {
		if s.extracted[d.Name] || !want(d) {
			continue
		}
		if err := extractDeb(ctx, s.repo.path(d), s.root, skipShare); err != nil {
			return fmt.Errorf("stage %s: %w", s.repo.name, err)
		}
		s.extracted[d.Name] = true
	}
	return nil
}

// closure returns the ELF closure of bins in the staging tree, unpacking
// the remaining packages once if a library is missing.
func (s *staging) closure(ctx context.Context, bins []string) ([]string, error) {
	paths, err := elfClosure(s.root, bins, debianLibDirs)
	if err == nil || len(s.extracted) == len(s.res.Packages) {
		return paths, err
	}
	if err := s.extract(ctx, func(deb) bool { return true }); err != nil {
		return nil, err
	}
	return elfClosure(s.root, bins, debianLibDirs)
}

// copyClosure copies bins and their ELF closure from the staging tree into t.
func (s *staging) copyClosure(ctx context.Context, t tree, bins ...string) error {
	paths, err := s.closure(ctx, bins)
	if err != nil {
		return err
	}
	for _, p := range paths {
		if err := t.copyFrom(s.root, p); err != nil {
			return err
		}
	}
	return nil
}
