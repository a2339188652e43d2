package v1alpha1

import (
	"encoding/json"
	"testing"
)

func TestConfigAcceptsScalars(t *testing.T) {
	var c Config
	in := `{"io-threads": 4, "appendonly": true, "save": false, "maxmemory": "100mb", "hz": 10.5, "x": null}`
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"io-threads": "4", "appendonly": "yes", "save": "no", "maxmemory": "100mb", "hz": "10.5", "x": ""}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("%s = %q, want %q", k, c[k], v)
		}
	}
	for _, nested := range []string{`{"a": {"b": 1}}`, `{"a": [1]}`} {
		if err := json.Unmarshal([]byte(nested), &c); err != nil {
			t.Fatalf("%s: %v", nested, err)
		}
		if IsScalarText(c["a"]) {
			t.Errorf("%s: decoded %q must not count as a scalar", nested, c["a"])
		}
	}
	if err := json.Unmarshal([]byte(`[1]`), &c); err == nil {
		t.Error("a list is not a config")
	}
	if !IsScalarText("100mb") || !IsScalarText("") || !IsScalarText("{not json") {
		t.Error("plain values are scalars")
	}
}

func TestConfigRoundTrip(t *testing.T) {
	spec := ValkeyClusterSpec{Config: Config{"io-threads": "4"}}
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var back ValkeyClusterSpec
	if err := json.Unmarshal(b, &back); err != nil || back.Config["io-threads"] != "4" {
		t.Fatalf("round trip: %v %v", back.Config, err)
	}
}
