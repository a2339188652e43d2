package node

import (
	"maps"
	"strings"
	"testing"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
)

func TestImageVersion(t *testing.T) {
	cases := map[string]valkey.Version{
		"valkey/valkey:8.0.1":                      {Major: 8, Minor: 0, Patch: 1},
		"valkey/valkey:9.0":                        {Major: 9},
		"valkey/valkey:8.1-alpine":                 {Major: 8, Minor: 1},
		"registry:5000/valkey/valkey:9.1.2":        {Major: 9, Minor: 1, Patch: 2},
		"registry:5000/valkey/valkey":              {},
		"valkey/valkey:latest":                     {},
		"valkey/valkey:v9.0.0@sha256:0123456789ab": {Major: 9},
		"valkey/valkey@sha256:0123456789ab":        {},
		"":                                         {},
	}
	for image, want := range cases {
		if got := imageVersion(image); got != want {
			t.Errorf("imageVersion(%q) = %v, want %v", image, got, want)
		}
	}
}

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
	if strings.Contains(string(renderConfig(testNode(), nil)), "shutdown-on-sigterm") {
		t.Error("an 8.0 image is given a 9.0-only default")
	}
	v9 := testNode(func(vn *v1alpha1.ValkeyNode) { vn.Spec.Image = "valkey/valkey:9.0.0" })
	if !strings.Contains(string(renderConfig(v9, nil)), "shutdown-on-sigterm failover") {
		t.Error("a 9.0 image lacks shutdown-on-sigterm failover")
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
