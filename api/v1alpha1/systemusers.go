package v1alpha1

import (
	"encoding/json"
	"net"
	"strconv"
)

// Keys of the {cluster}-system-users Secret besides the users' passwords (added for the
// acl-controller; the node-controller mounts them).
const (
	// ExporterPasswordFileKey holds the password file of the metrics exporter
	// (redis_exporter -redis.password-file): a JSON object from the URI the exporter
	// scrapes, with the user, to the _exporter password. It has entries for
	// redis://_exporter@localhost:6379 and rediss://_exporter@localhost:6379 (and the same
	// with 127.0.0.1), so the exporter must scrape one of those addresses with
	// -redis.user _exporter. redis_exporter reads the file at start and on GET /-/reload,
	// which the acl-controller calls after a password rotation.
	ExporterPasswordFileKey = "exporter-passwords.json"
)

// ExporterPasswordFile renders the ExporterPasswordFileKey content for the _exporter
// password of a server on port.
func ExporterPasswordFile(password string, port int) []byte {
	m := map[string]string{}
	for _, scheme := range []string{"redis", "rediss"} {
		for _, host := range []string{"localhost", "127.0.0.1"} {
			m[scheme+"://"+UserExporter+"@"+net.JoinHostPort(host, strconv.Itoa(port))] = password
		}
	}
	b, _ := json.Marshal(m) // a map of strings always marshals
	return append(b, '\n')
}
