package standin

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestRemapText(t *testing.T) {
	ms, err := mounts(&corev1.Container{Name: "server", VolumeMounts: []corev1.VolumeMount{
		{Name: "etc", MountPath: "/etc/valkey"}, {Name: "data", MountPath: "/data"}, {Name: "tmp", MountPath: "/tmp"},
	}}, map[string]string{"etc": "/h/etc", "data": "/h/data", "tmp": "/h/tmp"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"quoted directive", `dir "/data"`, `dir "/h/data"`},
		{"file under a mount", `include "/etc/valkey/system/primaryauth"`, `include "/h/etc/system/primaryauth"`},
		{"argument", "/data/.operator-defaults.conf", "/h/data/.operator-defaults.conf"},
		{"not a mount", "/dev/stderr /database", "/dev/stderr /database"},
		{"script code keeps variables", `rm -rf "${data:?}/$nodes_conf" /tmp/x`, `rm -rf "${data:?}/$nodes_conf" /h/tmp/x`},
		{"relative path", "nodes.conf", "nodes.conf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := remapText(tc.in, ms); got != tc.want {
				t.Errorf("remapText(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestMountsNeedTheirVolume(t *testing.T) {
	_, err := mounts(&corev1.Container{Name: "server", VolumeMounts: []corev1.VolumeMount{{Name: "etc", MountPath: "/etc/valkey"}}}, map[string]string{})
	if err == nil {
		t.Fatal("a mount of a volume the pod lacks was accepted")
	}
}

func TestOwnAddress(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"every address", "port \"6379\"\nbind \"*\" \"-::*\"\ndir \"/data\"\n",
			"port \"6379\"\nbind 127.70.0.1\nbind-source-addr 127.70.0.1\ndir \"/data\"\n"},
		{"no bind line", "port 6379\n", "port 6379\n"},
		{"a key that starts like bind", "bind-source-addr 10.0.0.1\n", "bind-source-addr 10.0.0.1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ownAddress(tc.in, "127.70.0.1"); got != tc.want {
				t.Errorf("ownAddress(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseStat(t *testing.T) {
	// A node-controller's /proc/<pid>/stat (a command name with a space and a
	// parenthesis, as the kernel allows).
	line := "4242 (node (ctl) x) S 1 4242 4242 0 -1 4194560 9000 0 0 0 250 50 0 0 20 0 12 0 987654 1300000000 16384 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	cpu, rss, start, err := parseStat(line, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if cpu != 3 || rss != 16384*4096 || start != 987654 {
		t.Errorf("parseStat = %v s, %v bytes, start %d; want 3 s, %d bytes, start 987654", cpu, rss, start, 16384*4096)
	}
	if _, _, _, err := parseStat("4242 (short) S 1 2", 4096); err == nil {
		t.Error("a truncated line was accepted")
	}
}
