package validation

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkeyconf"
)

func config(kv ...string) func(c *v1alpha1.ValkeyCluster) {
	return func(c *v1alpha1.ValkeyCluster) {
		c.Spec.Config = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			c.Spec.Config[kv[i]] = kv[i+1]
		}
	}
}

func TestValidateConfig(t *testing.T) {
	runClusterCases(t, []clusterCase{
		{name: "seed keys", mutate: config("io-threads", "4", "maxmemory-policy", "noeviction")},
		{name: "live keys", mutate: config("maxmemory", "1gb", "maxclients", "1000")},
		{name: "empty value", mutate: config("save", "")},
		{name: "value with spaces", mutate: config("save", "900 1 300 10")},
		{name: "value with a tab", mutate: config("save", "900\t1")},
		{name: "owned key", mutate: config("port", "7000"),
			want: []string{`spec.config[port]: Forbidden: "port" is managed by the operator and cannot be set; the operator owns: aclfile, bind,`}},
		{name: "owned key in another case", mutate: config("Cluster-Enabled", "no"),
			want: []string{"spec.config[Cluster-Enabled]: Forbidden"}},
		{name: "owned prefix family", mutate: config("tls-port", "6380"),
			want: []string{"spec.config[tls-port]: Forbidden", "tls-*", "cluster-announce-*"}},
		{name: "owned password", mutate: config("requirepass", "secret"), want: []string{"spec.config[requirepass]: Forbidden"}},
		{name: "owned include", mutate: config("include", "/etc/passwd"), want: []string{"spec.config[include]: Forbidden"}},
		{name: "module", mutate: config("loadmodule", "/usr/lib/valkey/modules/json.so"),
			want: []string{`spec.config[loadmodule]: Forbidden: "loadmodule" is refused: a module is native code`, "allowed by the operator's administrator: none"}},
		{name: "debug command", mutate: config("enable-debug-command", "yes"),
			want: []string{`spec.config[enable-debug-command]: Forbidden: "enable-debug-command" is refused: DEBUG`}},
		{name: "module command in another case", mutate: config("Enable-Module-Command", "local"),
			want: []string{"spec.config[Enable-Module-Command]: Forbidden"}},
		{name: "malformed key", mutate: config("max memory", "1gb"),
			want: []string{`spec.config[max memory]: Invalid value: "max memory": is not a configuration name`}},
		{name: "empty key", mutate: config("", "x"), want: []string{"spec.config[]: Invalid value"}},
		{name: "value with a newline", mutate: config("maxmemory-policy", "noeviction\nport 1"),
			want: []string{"spec.config[maxmemory-policy]: Invalid value", "must not contain newlines"}},
		{name: "value with a carriage return", mutate: config("maxmemory", "1gb\r"), want: []string{"spec.config[maxmemory]"}},
		{name: "same key twice in two cases", mutate: config("maxmemory", "1gb", "MAXMEMORY", "2gb"),
			want: []string{"spec.config[maxmemory]: Duplicate value"}},
		{name: "failover timeout (8.1 and later)", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Image = "valkey/valkey:8.1.1"
			c.Spec.Config = map[string]string{"cluster-manual-failover-timeout": "20000"}
		}},
		{name: "failover timeout not a number", mutate: config("cluster-manual-failover-timeout", "5s"),
			want: []string{`spec.config[cluster-manual-failover-timeout]: Invalid value: "5s": must be a whole number of milliseconds`}},
		{name: "failover timeout zero", mutate: config("cluster-manual-failover-timeout", "0"),
			want: []string{"spec.config[cluster-manual-failover-timeout]"}},
		{name: "failover timeout above a minute (the grace period would pass 70 s)", mutate: config("cluster-manual-failover-timeout", "60001"),
			want: []string{`spec.config[cluster-manual-failover-timeout]: Invalid value: "60001": must be a whole number of milliseconds between 1000 and 60000`}},
		{name: "failover timeout at the bounds", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Image = "valkey/valkey:9.1.2"
			c.Spec.Config = map[string]string{"cluster-manual-failover-timeout": "1000", "cluster-node-timeout": "60000"}
		}},
		{name: "node timeout in another case, above a minute", mutate: config("Cluster-Node-Timeout", "60001"),
			want: []string{`spec.config[Cluster-Node-Timeout]: Invalid value: "60001": must be a whole number of milliseconds between 1000 and 60000: a crashed server waits`}},
		{name: "a key 8.0 does not have, on the default 8.0.1 image", mutate: config("cluster-manual-failover-timeout", "10000"),
			want: []string{`spec.config[cluster-manual-failover-timeout]: Invalid value: "10000": Valkey 8.1 and later take this; the image valkey/valkey:8.0.1 runs 8.0`}},
		{name: "a key 8.1 has, on 8.1", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Image = "valkey/valkey:8.1.1"
			c.Spec.Config = map[string]string{"cluster-manual-failover-timeout": "10000"}
		}},
		{name: "a value only 9.0 takes, on an 8.x tag", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Image = "valkey/valkey:8"
			c.Spec.Config = map[string]string{"shutdown-on-sigterm": "failover"}
		}, want: []string{"Valkey 9.0 and later take this; the image valkey/valkey:8 runs 8.x"}},
		{name: "a tag without a version: the server decides when it starts", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Image = "registry.example.com/mirror/valkey:stable"
			c.Spec.Config = map[string]string{"log-format": "json"}
		}},
		{name: "node timeout below a second", mutate: config("cluster-node-timeout", "999"),
			want: []string{"spec.config[cluster-node-timeout]: Invalid value: \"999\""}},
	})
}

func TestOwnedKeysListNamesFamilies(t *testing.T) {
	got := ownedKeysList()
	for _, want := range []string{"port", "tls-*", "dir", "aclfile"} {
		if !strings.Contains(got, want) {
			t.Errorf("owned key list %q lacks %q", got, want)
		}
	}
}

func TestGracePeriodDerivation(t *testing.T) {
	for _, tc := range []struct {
		name        string
		config      map[string]string
		explicit    *int64
		wantMinimum int64
		wantGrace   int64
		wantShort   bool
	}{
		{name: "defaults", wantMinimum: 15, wantGrace: 30},
		{name: "timeout rounds up", config: map[string]string{"cluster-manual-failover-timeout": "5001"}, wantMinimum: 16, wantGrace: 30},
		{name: "large timeout raises the grace period",
			config: map[string]string{"CLUSTER-MANUAL-FAILOVER-TIMEOUT": "60000"}, wantMinimum: 70, wantGrace: 70},
		{name: "explicit value honoured", explicit: ptr.To[int64](20), wantMinimum: 15, wantGrace: 20},
		{name: "explicit short value", explicit: ptr.To[int64](5), wantMinimum: 15, wantGrace: 5, wantShort: true},
		// A value that is not a timeout is refused by validateConfig; meanwhile it counts
		// as Valkey's default, as everywhere the operator derives from it.
		{name: "bad timeout", config: map[string]string{"cluster-manual-failover-timeout": "x"},
			explicit: ptr.To[int64](5), wantMinimum: 15, wantGrace: 5, wantShort: true},
		{name: "bad timeout without explicit value",
			config: map[string]string{"cluster-manual-failover-timeout": "-1"}, wantMinimum: 15, wantGrace: 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &v1alpha1.ValkeyClusterSpec{Config: tc.config, TerminationGracePeriodSeconds: tc.explicit}
			if minimum := valkeyconf.MinimumGracePeriodSeconds(tc.config); minimum != tc.wantMinimum {
				t.Errorf("minimum = %d, want %d", valkeyconf.MinimumGracePeriodSeconds(tc.config), tc.wantMinimum)
			}
			if got := GracePeriodSeconds(s); got != tc.wantGrace {
				t.Errorf("GracePeriodSeconds = %d, want %d", got, tc.wantGrace)
			}
			if short, _ := GracePeriodTooShort(s); short != tc.wantShort {
				t.Errorf("GracePeriodTooShort = %v, want %v", short, tc.wantShort)
			}
		})
	}
}

func TestAllowedModulesPolicy(t *testing.T) {
	SetPolicy(Policy{AllowedModules: []string{"/usr/lib/valkey/json.so"}})
	defer SetPolicy(Policy{})
	runClusterCases(t, []clusterCase{
		{name: "an allowed module, with arguments", mutate: config("loadmodule", "/usr/lib/valkey/json.so MAXDEPTH 8")},
		{name: "another module", mutate: config("loadmodule", "/tmp/evil.so"),
			want: []string{"spec.config[loadmodule]: Forbidden", "administrator: /usr/lib/valkey/json.so"}},
		{name: "debug command stays refused", mutate: config("enable-debug-command", "local"),
			want: []string{"spec.config[enable-debug-command]: Forbidden"}},
	})
	if _, err := ParseModules("/a.so, relative.so"); err == nil {
		t.Error("a relative module path was accepted")
	}
	if got, err := ParseModules(" /a.so,,/b.so "); err != nil || len(got) != 2 {
		t.Errorf("ParseModules = %v, %v", got, err)
	}
}

// TestValidateConfigTypes: every key is one a supported Valkey has, and every value one
// its server takes (the key table measured on the real servers, valkeyconf).
func TestValidateConfigTypes(t *testing.T) {
	image := func(img string, kv ...string) func(c *v1alpha1.ValkeyCluster) {
		return func(c *v1alpha1.ValkeyCluster) {
			config(kv...)(c)
			c.Spec.Image = img
		}
	}
	runClusterCases(t, []clusterCase{
		{name: "a key of no Valkey", mutate: config("maxmemroy", "1gb"),
			want: []string{`spec.config[maxmemroy]: Invalid value: "maxmemroy": is not a configuration key of any supported Valkey (8.0, 8.1, 9.1`,
				"policy.allowedConfigKeys"}},
		{name: "a key of no Valkey, in another case", mutate: config("No-Such-Key", "1"), want: []string{"spec.config[No-Such-Key]: Invalid value"}},
		{name: "a hidden debugging key is not admitted", mutate: config("key-load-delay", "100"), want: []string{"spec.config[key-load-delay]"}},
		{name: "old names (aliases) are keys", mutate: config("hash-max-ziplist-entries", "256", "slave-read-only", "yes")},
		{name: "memory sizes", mutate: config("maxmemory", "1gb", "repl-backlog-size", "100mb", "client-query-buffer-limit", "1073741824",
			"active-defrag-ignore-bytes", "100MB", "hll-sparse-max-bytes", "3k", "stream-node-max-bytes", "4kb")},
		{name: "a memory size of lots", mutate: config("maxmemory", "lots"),
			want: []string{`spec.config[maxmemory]: Invalid value: "lots": must be a memory size (bytes, or with a unit: 100mb, 1gb;`}},
		{name: "a memory size with a unit Valkey lacks", mutate: config("maxmemory", "1tb"), want: []string{`spec.config[maxmemory]: Invalid value: "1tb"`}},
		{name: "a memory size below the key's least", mutate: config("proto-max-bulk-len", "1kb"),
			want: []string{`spec.config[proto-max-bulk-len]: Invalid value: "1kb": must be a memory size`, "of 1048576 bytes or more"}},
		{name: "a memory size or a percentage", mutate: config("maxmemory-clients", "10%")},
		{name: "a percentage past 100", mutate: config("maxmemory-clients", "150%"),
			want: []string{`spec.config[maxmemory-clients]: Invalid value: "150%"`, "or a percentage from 0% to 100%"}},
		{name: "booleans", mutate: config("appendonly", "yes", "activedefrag", "NO", "lazyfree-lazy-eviction", "no")},
		{name: "not a boolean", mutate: config("appendonly", "maybe"), want: []string{`spec.config[appendonly]: Invalid value: "maybe": must be yes or no`}},
		{name: "a boolean written as a number", mutate: config("appendonly", "1"), want: []string{`spec.config[appendonly]: Invalid value: "1": must be yes or no`}},
		{name: "integers in range", mutate: config("active-defrag-cycle-max", "99", "databases", "16", "tcp-keepalive", "0", "io-threads", "4")},
		{name: "an integer past its bound", mutate: config("active-defrag-cycle-max", "100"),
			want: []string{`spec.config[active-defrag-cycle-max]: Invalid value: "100": must be a whole number from 1 to 99`}},
		{name: "not an integer", mutate: config("databases", "sixteen"),
			want: []string{`spec.config[databases]: Invalid value: "sixteen": must be a whole number from 1 to 2147483647`}},
		{name: "an octal mode", mutate: config("unixsocketperm", "700")},
		{name: "not an octal mode", mutate: config("unixsocketperm", "rwx"),
			want: []string{`spec.config[unixsocketperm]: Invalid value: "rwx": must be an octal number from 0 to 777`}},
		{name: "enum values, in any case", mutate: config("maxmemory-policy", "allkeys-lru", "loglevel", "WARNING", "appendfsync", "always")},
		{name: "not an enum value", mutate: config("maxmemory-policy", "lru"),
			want: []string{`spec.config[maxmemory-policy]: Invalid value: "lru": must be one of volatile-lru, `, "noeviction"}},
		{name: "flags", mutate: config("shutdown-on-sigterm", "nosave force")},
		{name: "not flags", mutate: config("shutdown-on-sigterm", "now later"),
			want: []string{`spec.config[shutdown-on-sigterm]: Invalid value: "now later": must be one or more of default, save, nosave, now, force, safe, failover, separated by single spaces`}},
		{name: "keys of their own syntax are the server's", mutate: config("save", "900 1", "client-output-buffer-limit", "pubsub 32mb 8mb 60",
			"notify-keyspace-events", "Ex", "dbfilename", "data.rdb")},
		{name: "a key only 9.x has, on the default 8.0 image", mutate: config("cluster-databases", "4"),
			want: []string{`spec.config[cluster-databases]: Invalid value: "4": Valkey 9.0 and later take this; the image valkey/valkey:8.0.1 runs 8.0`}},
		{name: "a key only 9.x has, on 9.1", mutate: image("valkey/valkey:9.1.2", "cluster-databases", "4")},
		{name: "a key only 9.x has, on a tag naming 9", mutate: image("valkey/valkey:9", "cluster-databases", "4")},
		{name: "a key only 9.x has, on a tag naming no version", mutate: image("valkey/valkey:latest", "cluster-databases", "4")},
		{name: "a value only 8.1 and later take", mutate: config("io-threads", "200"),
			want: []string{`spec.config[io-threads]: Invalid value: "200": Valkey 8.1 and later take this; the image valkey/valkey:8.0.1 runs 8.0`}},
		{name: "a value only 9.x takes, on 8.1", mutate: image("valkey/valkey:8.1.1", "log-format", "json"),
			want: []string{`spec.config[log-format]: Invalid value: "json": Valkey 9.0 and later take this; the image valkey/valkey:8.1.1 runs 8.1`}},
		{name: "a key 9.1 takes without listing it", mutate: image("valkey/valkey:9.1.2", "dynamic-hz", "yes")},
		{name: "an admitted key of a newer Valkey", mutate: config("New-Key-Of-Valkey-10", "anything"),
			policy: &Policy{AllowedConfigKeys: []string{"new-key-of-valkey-10"}}},
		{name: "the admitted keys only", mutate: config("new-key-of-valkey-10", "x", "other-new-key", "y"),
			policy: &Policy{AllowedConfigKeys: []string{"new-key-of-valkey-10"}},
			want:   []string{"spec.config[other-new-key]: Invalid value"}},
		{name: "an admitted key stays refused when the operator owns it", mutate: config("port", "7000"),
			policy: &Policy{AllowedConfigKeys: []string{"port"}}, want: []string{"spec.config[port]: Forbidden"}},
		{name: "admitting unknown keys checks known keys all the same", mutate: config("maxmemory", "lots"),
			policy: &Policy{AllowedConfigKeys: []string{"maxmemory"}}, want: []string{"spec.config[maxmemory]: Invalid value"}},
	})
}

func TestParseConfigKeys(t *testing.T) {
	got, err := ParseConfigKeys(" New-Key ,other.key,, ")
	if err != nil || len(got) != 2 || got[0] != "new-key" || got[1] != "other.key" {
		t.Errorf("ParseConfigKeys = %v, %v", got, err)
	}
	for _, bad := range []string{"port", "tls-port", "loadmodule", "bad key", "rename-command"} {
		if _, err := ParseConfigKeys(bad); err == nil || !strings.Contains(err.Error(), "--allowed-config-keys") {
			t.Errorf("ParseConfigKeys(%q) = %v; want a refusal naming the flag", bad, err)
		}
	}
}
