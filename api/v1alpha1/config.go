package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Config is Valkey configuration: directive names mapped to their values. Values may be
// written as YAML strings, numbers or booleans (`io-threads: 4`, `appendonly: yes`), as
// in a valkey.conf; they are kept as the strings Valkey reads, booleans as yes and no.
//
// Fields of this type carry the markers that make the schema accept those scalars (a
// type-level marker cannot replace the string schema of the underlying map). A value that
// is not a scalar decodes to its JSON text, so one bad object never breaks a controller's
// list of clusters; the validation package refuses it (IsScalarText).
type Config map[string]string

// UnmarshalJSON accepts string, number and boolean values.
func (c *Config) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*c = nil
		return nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	out := make(Config, len(raw))
	for k, v := range raw {
		s, err := scalarString(v)
		if err != nil {
			return fmt.Errorf("config %q: %w", k, err)
		}
		out[k] = s
	}
	*c = out
	return nil
}

// scalarString turns a JSON scalar into the string Valkey reads.
func scalarString(v json.RawMessage) (string, error) {
	v = bytes.TrimSpace(v)
	switch {
	case len(v) == 0:
		return "", nil
	case v[0] == '"':
		var s string
		err := json.Unmarshal(v, &s)
		return s, err
	case bytes.Equal(v, []byte("true")):
		return "yes", nil
	case bytes.Equal(v, []byte("false")):
		return "no", nil
	case bytes.Equal(v, []byte("null")):
		return "", nil
	}
	if v[0] == '{' || v[0] == '[' {
		return string(v), nil
	}
	var n json.Number
	if err := json.Unmarshal(v, &n); err != nil {
		return "", fmt.Errorf("must be a string, number or boolean")
	}
	if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
		return strconv.FormatInt(i, 10), nil
	}
	return n.String(), nil
}

// IsScalarText reports whether a decoded config value came from a scalar: objects and
// arrays decode to their JSON text, which starts with '{' or '['.
func IsScalarText(v string) bool {
	return !(len(v) > 0 && (v[0] == '{' || v[0] == '[') && json.Valid([]byte(v)))
}
