package images

import (
	"debug/elf"
	"fmt"
	"path"
	"sort"
	"strings"
)

// debianLibDirs are the directories the dynamic loader of Debian amd64
// searches by default, usr-merged paths first.
var debianLibDirs = []string{
	"/usr/lib/x86_64-linux-gnu",
	"/lib/x86_64-linux-gnu",
	"/usr/lib",
	"/lib",
	"/usr/lib64",
	"/lib64",
}

// elfInfo is what the closure needs from one ELF file.
type elfInfo struct {
	class   elf.Class
	machine elf.Machine
	interp  string   // PT_INTERP, "" for static binaries and libraries
	needed  []string // DT_NEEDED
	rpath   []string // DT_RUNPATH, or DT_RPATH when there is no DT_RUNPATH
}

// readELF reads the dynamic-linking facts of the file at hostPath.
func readELF(hostPath string) (elfInfo, error) {
	f, err := elf.Open(hostPath)
	if err != nil {
		return elfInfo{}, fmt.Errorf("open ELF %s: %w", hostPath, err)
	}
	defer f.Close()
	info := elfInfo{class: f.Class, machine: f.Machine}
	for _, prog := range f.Progs {
		if prog.Type != elf.PT_INTERP {
			continue
		}
		buf := make([]byte, prog.Filesz)
		if _, err := prog.ReadAt(buf, 0); err != nil {
			return elfInfo{}, fmt.Errorf("read interpreter of %s: %w", hostPath, err)
		}
		info.interp = strings.TrimRight(string(buf), "\x00")
	}
	if f.Section(".dynamic") == nil && info.interp == "" {
		return info, nil // static
	}
	if info.needed, err = f.DynString(elf.DT_NEEDED); err != nil {
		return elfInfo{}, fmt.Errorf("read DT_NEEDED of %s: %w", hostPath, err)
	}
	info.rpath, err = searchPath(f)
	if err != nil {
		return elfInfo{}, fmt.Errorf("read run path of %s: %w", hostPath, err)
	}
	return info, nil
}

// searchPath returns DT_RUNPATH, or DT_RPATH if there is no DT_RUNPATH,
// split into directories.
func searchPath(f *elf.File) ([]string, error) {
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		values, err := f.DynString(tag)
		if err != nil {
			return nil, err
		}
		var dirs []string
		for _, v := range values {
			dirs = append(dirs, strings.Split(v, ":")...)
		}
		if len(dirs) > 0 {
			return dirs, nil
		}
	}
	return nil, nil
}

// elfClosure returns the in-tree paths needed to run the ELF files at paths
// inside root: the files, their DT_NEEDED libraries (transitively) resolved
// against the run path and libDirs inside root (never the host's), the
// program interpreter, and every symlink met on the way. The result is
// sorted.
func elfClosure(root rootFS, paths, libDirs []string) ([]string, error) {
	c := closure{root: root, libDirs: libDirs, seen: map[string]bool{}, done: map[string]bool{}}
	for _, p := range paths {
		if err := c.addELF(p, nil); err != nil {
			return nil, err
		}
	}
	out := make([]string, 0, len(c.seen))
	for p := range c.seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

// closure is the state of one elfClosure computation.
type closure struct {
	root    rootFS
	libDirs []string
	seen    map[string]bool // every path to copy (symlinks and files)
	done    map[string]bool // real ELF files already scanned
}

// addPath records p, the symlinks leading to it and its final file, and
// returns the final path.
func (c *closure) addPath(p string) (string, error) {
	links, final, err := c.root.resolve(p)
	if err != nil {
		return "", err
	}
	for _, l := range links {
		c.seen[l] = true
	}
	c.seen[final] = true
	return final, nil
}

// addELF adds the ELF file p and everything it needs. want, when set, is the
// class and machine of the object that needs p (libraries of another ABI in
// the search path are skipped by the loader, and so here).
func (c *closure) addELF(p string, want *elfInfo) error {
	final, err := c.addPath(p)
	if err != nil {
		return fmt.Errorf("add %s: %w", p, err)
	}
	if c.done[final] {
		return nil
	}
	c.done[final] = true
	info, err := readELF(c.root.host(final))
	if err != nil {
		return err
	}
	if want != nil && (info.class != want.class || info.machine != want.machine) {
		return fmt.Errorf("add %s: ELF class/machine %v/%v, want %v/%v", p, info.class, info.machine, want.class, want.machine)
	}
	if info.interp != "" {
		if err := c.addELF(info.interp, &info); err != nil {
			return fmt.Errorf("interpreter of %s: %w", p, err)
		}
	}
	for _, lib := range info.needed {
		found, err := c.findLib(lib, final, info)
		if err != nil {
			return fmt.Errorf("library %s needed by %s: %w", lib, p, err)
		}
		if err := c.addELF(found, &info); err != nil {
			return err
		}
	}
	return nil
}

// findLib locates the library name needed by the object at from, in the run
// path of that object and then in the default directories, like ld.so.
func (c *closure) findLib(name, from string, info elfInfo) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	var dirs []string
	for _, d := range info.rpath {
		dirs = append(dirs, strings.NewReplacer("$ORIGIN", path.Dir(from), "${ORIGIN}", path.Dir(from)).Replace(d))
	}
	dirs = append(dirs, c.libDirs...)
	for _, d := range dirs {
		candidate := path.Join("/", d, name)
		if !c.root.exists(candidate) {
			continue
		}
		_, final, err := c.root.resolve(candidate)
		if err != nil {
			continue
		}
		lib, err := readELF(c.root.host(final))
		if err != nil || lib.class != info.class || lib.machine != info.machine {
			continue
		}
		return candidate, nil
	}
	return "", fmt.Errorf("not found in %s under %s", strings.Join(dirs, ":"), c.root)
}
