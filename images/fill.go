package images

import (
	"context"
	"fmt"
	"io/fs"
)

// busyboxApplets are linked to busybox in every image with a shell. The
// first line is what tests and probes rely on.
var busyboxApplets = []string{
	"sh", "cat", "grep", "sleep", "kill", "nc", "ls", "ps", "echo", "test", "date", "env", "wget", "timeout", "sed", "awk", "head", "tail",
	"[", "[[", "base64", "basename", "chmod", "chown", "cp", "cut", "dd", "df", "diff", "dirname", "du", "expr", "false",
	"find", "free", "gunzip", "gzip", "hostname", "id", "ip", "less", "ln", "md5sum", "mkdir", "mktemp", "mv", "netstat",
	"nproc", "nslookup", "pidof", "printf", "pwd", "readlink", "realpath", "rm", "rmdir", "seq",
	"sha256sum", "sort", "stat", "tar", "tee", "top", "touch", "tr", "true", "uname", "uniq", "usleep", "vi", "watch",
	"wc", "which", "whoami", "xargs", "yes",
}

// valkeyAccounts are /etc/passwd and /etc/group of the images with Valkey.
var valkeyAccounts = accounts{
	Passwd: "root:x:0:0:root:/root:/bin/sh\n" +
		"valkey:x:999:999:Valkey:/data:/bin/sh\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
	Group: "root:x:0:\nvalkey:x:999:\nnogroup:x:65534:\n",
}

// operatorAccounts are /etc/passwd and /etc/group of the operator image.
var operatorAccounts = accounts{
	Passwd: "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n",
	Group: "root:x:0:\nnonroot:x:65532:\nnogroup:x:65534:\n",
}

// accounts is the content of /etc/passwd and /etc/group.
type accounts struct{ Passwd, Group string }

// addBase adds the files every image has: accounts, nsswitch.conf and /tmp.
func addBase(t tree, a accounts) {
	t.content("/etc/passwd", []byte(a.Passwd), 0o644)
	t.content("/etc/group", []byte(a.Group), 0o644)
	t.content("/etc/nsswitch.conf", []byte("passwd: files\ngroup: files\nhosts: files dns\n"), 0o644)
	t.dir("/tmp", 0o777|fs.ModeSticky, 0, 0)
}

// fillValkey adds valkey-cli (and, for a server image, valkey-server,
// valkey-benchmark and the usual aliases) with their libraries from the
// dist's staging tree, busybox, accounts and /data.
func (b *builder) fillValkey(ctx context.Context, t tree, dist string, server bool) error {
	st, err := b.staging(ctx, dist)
	if err != nil {
		return err
	}
	bins := []string{"/usr/bin/valkey-cli"}
	if server {
		bins = append(bins, "/usr/bin/valkey-server", "/usr/bin/valkey-benchmark")
	}
	if err := st.copyClosure(ctx, t, bins...); err != nil {
		return err
	}
	if server {
		for _, alias := range []string{"valkey-check-aof", "valkey-check-rdb", "valkey-sentinel"} {
			if _, ok := t["/usr/bin/"+alias]; !ok {
				t.symlink("/usr/bin/"+alias, "valkey-server")
			}
		}
		for _, n := range []string{"server", "cli", "benchmark", "check-aof", "check-rdb", "sentinel"} {
			t.symlink("/usr/bin/redis-"+n, "valkey-"+n)
		}
	}
	if err := b.addBusybox(ctx, t); err != nil {
		return err
	}
	addBase(t, valkeyAccounts)
	t.dir("/data", 0o777, 999, 999)
	return nil
}

// fillExporter adds the exporter (as /usr/bin/prometheus-redis-exporter and
// /redis_exporter, the upstream image's entrypoint) with its libraries,
// busybox and accounts.
func (b *builder) fillExporter(ctx context.Context, t tree) error {
	st, err := b.staging(ctx, sid.name)
	if err != nil {
		return err
	}
	if err := st.copyClosure(ctx, t, "/usr/bin/prometheus-redis-exporter"); err != nil {
		return err
	}
	t.symlink("/redis_exporter", "usr/bin/prometheus-redis-exporter")
	if err := b.addBusybox(ctx, t); err != nil {
		return err
	}
	addBase(t, valkeyAccounts)
	return nil
}

// addBusybox adds the static busybox of bookworm and its applet links.
func (b *builder) addBusybox(ctx context.Context, t tree) error {
	st, err := b.staging(ctx, bookworm.name)
	if err != nil {
		return err
	}
	if !st.root.exists("/usr/bin/busybox") {
		return fmt.Errorf("busybox-static of %s has no /bin/busybox", bookworm.name)
	}
	if err := t.copyFrom(st.root, "/usr/bin/busybox"); err != nil {
		return err
	}
	for _, a := range busyboxApplets {
		if _, ok := t["/usr/bin/"+a]; !ok {
			t.symlink("/usr/bin/"+a, "busybox")
		}
	}
	return nil
}
