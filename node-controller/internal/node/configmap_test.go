package node

import (
	"maps"
	"strings"
	"testing"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func TestRenderConfigUsesTheSpec(t *testing.T) {
	conf := string(renderConfig(testNode(withTLS), map[string]string{"maxmemory": "1gb"}))
	for _, want := range []string{
		"port 0\n", "tls-port 6379\n", "tls-cert-file /etc/valkey/tls/tls.crt\n", "tls-ca-cert-file /etc/valkey/tls/ca.crt\n",
		"dir /data\n", "cluster-config-file nodes.conf\n", "aclfile /etc/valkey/acl/users.acl\n",
		"masteruser _replication\n", "include /etc/valkey/system/primaryauth.conf\n", "maxmemory 1gb\n",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("valkey.conf lacks %q:\n%s", want, conf)
		}
	}
	if strings.Contains(string(renderConfig(testNode(), nil)), "tls-") {
		t.Error("TLS directives without a TLS Secret")
	}
	// Whatever the image's tag says, valkey.conf holds what every version takes; the
	// defaults of newer versions come from the file the start command writes.
	v9 := testNode(func(vn *v1alpha1.ValkeyNode) { vn.Spec.Image = "valkey/valkey:9.0.0" })
	for _, vn := range []*v1alpha1.ValkeyNode{testNode(), v9} {
		conf := string(renderConfig(vn, nil))
		if strings.Contains(conf, "shutdown-on-sigterm") || !strings.Contains(conf, "include "+VersionedIncludePath+"\n") {
			t.Errorf("%s: valkey.conf renders a versioned default itself, or does not include the file:\n%s", vn.Spec.Image, conf)
		}
		if i, j := strings.Index(conf, "include "+VersionedIncludePath), strings.Index(conf, "# User config."); i > j {
			t.Error("the versioned defaults come after the user config, which they must not override")
		}
	}
	if got := versionedDefaults(nil); got != "9.0 shutdown-on-sigterm failover\n" {
		t.Errorf("versioned defaults = %q", got)
	}
	if got := versionedDefaults(map[string]string{"Shutdown-On-Sigterm": "save"}); got != "" {
		t.Errorf("a default the user sets is still written: %q", got)
	}
}

func TestNormaliseConfig(t *testing.T) {
	got := normaliseConfig(map[string]string{"MaxMemory": "1gb", "maxmemory": "2gb", "port": "1", "bad key": "x", "appendonly": "yes"})
	want := map[string]string{"maxmemory": "2gb", "appendonly": "yes"}
	if !maps.Equal(got, want) {
		t.Errorf("normaliseConfig = %v, want %v (owned and malformed keys dropped, the later spelling wins)", got, want)
	}
}

func TestConfigMapRoundTrip(t *testing.T) {
	vn := testNode()
	applied := normaliseConfig(vn.Spec.Config)
	cm, err := buildConfigMap(vn, applied)
	if err != nil {
		t.Fatal(err)
	}
	if cm.Name != vn.Name || cm.Labels[v1alpha1.LabelNode] != vn.Name || cm.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedBy {
		t.Errorf("ConfigMap meta = %+v", cm.ObjectMeta)
	}
	got, ok := appliedConfig(cm)
	if !ok || !maps.Equal(got, applied) {
		t.Errorf("appliedConfig = %v %v, want %v", got, ok, applied)
	}
	again, _ := buildConfigMap(vn, applied)
	if again.Data[ConfigKey] != cm.Data[ConfigKey] || again.Annotations[AnnotationConfig] != cm.Annotations[AnnotationConfig] {
		t.Error("the same config renders differently")
	}
	cm.Annotations[AnnotationConfig] = "{not json"
	if _, ok := appliedConfig(cm); ok {
		t.Error("an unreadable record was accepted")
	}
}

func TestConfigHashIgnoresLiveKeys(t *testing.T) {
	base := configHash(testNode())
	if h := configHash(testNode(withConfig("maxmemory", "5gb", "appendonly", "no"))); h != base {
		t.Error("a live key changed the config hash")
	}
	if h := configHash(testNode(withConfig("maxmemory", "100mb", "appendonly", "yes"))); h == base {
		t.Error("a non-live key did not change the config hash")
	}
}
