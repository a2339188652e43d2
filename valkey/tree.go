package valkey

import (
	"fmt"
	"strconv"
)

// The reply of a command is first turned into a tree of plain values ([]any,
// map[string]any, string, int64, and others that the parsers refuse), so the
// parsers below do not depend on the client library and can be fuzzed. With
// RESP2 a map arrives as a flat array of alternating keys and values, with
// RESP3 as a map: the helpers accept both.

// pair is one key/value entry of a map-like reply.
type pair struct {
	key string
	val any
}

// pairs returns the entries of a map or of a flat key/value array, in the
// order of the array (maps have no order).
func pairs(v any) ([]pair, error) {
	switch t := v.(type) {
	case map[string]any:
		out := make([]pair, 0, len(t))
		for k, val := range t {
			out = append(out, pair{key: k, val: val})
		}
		return out, nil
	case []any:
		if len(t)%2 != 0 {
			return nil, fmt.Errorf("key/value array has odd length %d", len(t))
		}
		out := make([]pair, 0, len(t)/2)
		for i := 0; i < len(t); i += 2 {
			k, ok := t[i].(string)
			if !ok {
				return nil, fmt.Errorf("key is %T, want a string", t[i])
			}
			out = append(out, pair{key: k, val: t[i+1]})
		}
		return out, nil
	default:
		return nil, fmt.Errorf("reply is %T, want a map or a key/value array", v)
	}
}

// stringMap converts a map-like reply whose values are strings or integers.
func stringMap(v any) (map[string]string, error) {
	ps, err := pairs(v)
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(ps))
	for _, p := range ps {
		s, ok := scalarString(p.val)
		if !ok {
			return nil, fmt.Errorf("value of %q is %T, want a string", p.key, p.val)
		}
		m[p.key] = s
	}
	return m, nil
}

// scalarString returns a string, integer or nil value as a string.
func scalarString(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case int64:
		return strconv.FormatInt(t, 10), true
	case nil:
		return "", true
	default:
		return "", false
	}
}

// scalarInt returns an integer value, also when sent as a decimal string.
func scalarInt(v any) (int64, bool) {
	switch t := v.(type) {
	case int64:
		return t, true
	case string:
		n, err := strconv.ParseInt(t, 10, 64)
		return n, err == nil
	default:
		return 0, false
	}
}

// list returns an array value.
func list(v any) ([]any, bool) {
	t, ok := v.([]any)
	return t, ok
}
