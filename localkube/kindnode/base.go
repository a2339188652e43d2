package kindnode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// baseSuite is the Debian release of the node (systemd 252 still runs on cgroup v1).
const baseSuite = "bookworm"

// basePackages are installed on top of minbase: systemd as init, the tools the kubelet,
// kube-proxy's host side and the entrypoint run, and libseccomp for runc's profiles.
var basePackages = []string{
	"systemd", "iptables", "nftables", "iproute2", "conntrack", "ethtool", "kmod",
	"libseccomp2", "procps", "ca-certificates",
}

// prunedUnits are systemd's unit links of the base that a node container must not run
// (consoles, udev, boot-time cleanups of the tmpfs /run and /tmp kind mounts), as
// globs under the root.
var prunedUnits = []string{
	"etc/systemd/system/*.wants/*",
	"usr/lib/systemd/system/multi-user.target.wants/*",
	"usr/lib/systemd/system/local-fs.target.wants/*",
	"usr/lib/systemd/system/basic.target.wants/*",
	"usr/lib/systemd/system/sockets.target.wants/*udev*",
	"usr/lib/systemd/system/sockets.target.wants/*initctl*",
	"usr/lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service",
	"usr/lib/systemd/system/sysinit.target.wants/systemd-udev*",
}

// maskedUnits are linked to /dev/null: binfmt registration is the host kernel's business.
var maskedUnits = []string{"systemd-binfmt.service", "proc-sys-fs-binfmt_misc.automount", "getty.target", "console-getty.service"}

// baseDir is the unpacked base root file system (kept for the control-plane images,
// which take nft and iptables from it).
func (b *builder) baseDir() string { return b.c.dir("base") }

func (b *builder) baseInputs() string {
	h := sha256.New()
	fmt.Fprintf(h, "builder %s\nsuite %s\npackages %s\n", builderVersion, baseSuite, strings.Join(basePackages, ","))
	fmt.Fprintf(h, "pruned %s\nmasked %s\n", strings.Join(prunedUnits, ","), strings.Join(maskedUnits, ","))
	return hex.EncodeToString(h.Sum(nil))
}

// buildBase makes the base root file system with debootstrap and its layer, unless both
// are there from the same inputs.
func (b *builder) buildBase(ctx context.Context) error {
	file, inputs := b.c.dir("base.tar"), b.baseInputs()
	if l, ok := cachedLayer(file, inputs); ok {
		if _, err := os.Stat(filepath.Join(b.baseDir(), "usr", "sbin", "nft")); err == nil {
			b.base = l
			return nil
		}
	}
	root := b.baseDir()
	tmp := root + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	b.c.Log("debootstrap --variant=minbase %s with %s (once; about a minute)", baseSuite, strings.Join(basePackages, ","))
	logFile := b.c.dir("debootstrap.log")
	cmd := exec.CommandContext(ctx, "debootstrap", "--variant=minbase", "--include="+strings.Join(basePackages, ","),
		baseSuite, tmp, b.c.Mirror)
	out, err := cmd.CombinedOutput()
	_ = os.WriteFile(logFile, out, 0o644)
	if err != nil {
		return fmt.Errorf("debootstrap (log %s): %w\n%s", logFile, err, tail(out, 20))
	}
	if err := pruneBase(tmp); err != nil {
		return err
	}
	if err := os.RemoveAll(root); err != nil {
		return err
	}
	if err := os.Rename(tmp, root); err != nil {
		return err
	}
	lw, err := newLayerWriter(file)
	if err != nil {
		return err
	}
	// /dev, /proc, /sys, /run and /tmp are the container runtime's.
	skip := map[string]bool{"/dev": true, "/proc": true, "/sys": true, "/run": true, "/tmp": true}
	if err := lw.addDir(root, "/", skip); err != nil {
		lw.abort()
		return err
	}
	b.base, err = lw.finish(file, inputs)
	return err
}

// pruneBase turns the debootstrapped tree into a node's base: no package caches, no
// machine ID (the entrypoint makes one per node), units pruned and masked, systemd as
// /sbin/init, and the folder kubeadm writes static pods to.
func pruneBase(root string) error {
	for _, g := range append([]string{"var/cache/apt/archives/*.deb", "var/lib/apt/lists/*_*", "var/log/*.log"}, prunedUnits...) {
		matches, err := filepath.Glob(filepath.Join(root, g))
		if err != nil {
			return err
		}
		for _, m := range matches {
			if err := os.RemoveAll(m); err != nil {
				return err
			}
		}
	}
	for _, f := range []string{"etc/machine-id", "var/lib/dbus/machine-id"} {
		if err := os.Remove(filepath.Join(root, f)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	for _, u := range maskedUnits {
		p := filepath.Join(root, "etc/systemd/system", u)
		_ = os.Remove(p)
		if err := os.Symlink("/dev/null", p); err != nil {
			return err
		}
	}
	initLink := filepath.Join(root, "usr/sbin/init")
	_ = os.Remove(initLink)
	if err := os.Symlink("../lib/systemd/systemd", initLink); err != nil {
		return err
	}
	return os.MkdirAll(filepath.Join(root, "etc/kubernetes/manifests"), 0o755)
}
