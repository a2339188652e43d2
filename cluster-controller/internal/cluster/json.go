package cluster

import "encoding/json"

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	s := string(b)
	switch s {
	case "null", "{}", "[]", `""`:
		return ""
	}
	return s
}
