package valkey

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/valkey-operator/valkey-operator/valkeyconf"
)

// TLSFiles are the paths of the server's certificate, key and CA bundle.
type TLSFiles struct {
	CertFile, KeyFile, CAFile string
}

// ServerConfig is what RenderConfig needs to write valkey.conf.
type ServerConfig struct {
	// Port is the client port: the plain one, or the TLS one when TLS is set
	// (then the plain port is closed). The cluster bus is Port+10000.
	Port int
	// TLS, when set, turns TLS on for clients, the cluster bus and
	// replication.
	TLS *TLSFiles
	// Bind lists the addresses to listen on. Empty: "* -::*" (every
	// address; in Kubernetes the pod has one).
	Bind []string
	// DataDir is the working directory (RDB/AOF and, when relative, the
	// cluster config file).
	DataDir string
	// ClusterConfigFile is the nodes.conf the server owns.
	ClusterConfigFile string
	// ACLFile is the users file (loaded at start and by ACL LOAD).
	ACLFile string
	// PrimaryUser is the user a replica authenticates as to its primary.
	PrimaryUser string
	// PrimaryAuthInclude is the path of a file that holds the line
	// "masterauth <password>"; it is included so that the rendered config
	// holds no secret.
	PrimaryAuthInclude string
	// Version is the server version the config is for; the zero value means
	// the oldest supported (8.0). Defaults that only newer servers accept are
	// rendered only when Version allows them.
	Version Version
	// VersionedDefaults, when set, is the path of a file included after the defaults of
	// Version: the operator's defaults that only newer versions take, which the server's
	// start command writes there for the version it finds (the pod does not know its
	// version before it runs).
	VersionedDefaults string
	// User is the configuration the user asked for. Operator-owned keys and
	// malformed keys in it are never rendered (valkeyconf holds both rules).
	User map[string]string
}

// RenderConfig renders valkey.conf: the operator's keys, then the operator's
// defaults, then the user's keys sorted by name. The same input always gives
// the same bytes. Every value is quoted so that no value can add a
// directive.
func RenderConfig(c ServerConfig) []byte {
	var b bytes.Buffer
	b.WriteString("# Rendered by valkey-operator. Changes here are overwritten.\n")
	writeOwned(&b, c)
	b.WriteString("\n# Operator defaults (the user's config may override them).\n")
	for _, d := range valkeyconf.Defaults(c.Version) {
		directive(&b, d.Key, d.Value)
	}
	if c.VersionedDefaults != "" {
		directive(&b, "include", c.VersionedDefaults)
	}
	b.WriteString("\n# User config.\n")
	for _, k := range userKeys(c.User) {
		directive(&b, valkeyconf.Normalize(k), c.User[k])
	}
	return b.Bytes()
}

// writeOwned writes the operator-owned directives in a fixed order.
func writeOwned(b *bytes.Buffer, c ServerConfig) {
	directive(b, "cluster-enabled", "yes")
	directive(b, "cluster-config-file", c.ClusterConfigFile)
	directive(b, "cluster-allow-replica-migration", "no")
	directive(b, "daemonize", "no")
	directive(b, "logfile", "")
	directive(b, "protected-mode", "no")
	bind := c.Bind
	if len(bind) == 0 {
		bind = []string{"*", "-::*"}
	}
	directive(b, "bind", bind...)
	if c.TLS == nil {
		directive(b, "port", strconv.Itoa(c.Port))
	} else {
		writeTLS(b, c.Port, *c.TLS)
	}
	directive(b, "dir", c.DataDir)
	if c.ACLFile != "" {
		directive(b, "aclfile", c.ACLFile)
	}
	if c.PrimaryUser != "" {
		directive(b, "masteruser", c.PrimaryUser)
	}
	if c.PrimaryAuthInclude != "" {
		directive(b, "include", c.PrimaryAuthInclude)
	}
}

func writeTLS(b *bytes.Buffer, port int, t TLSFiles) {
	directive(b, "port", "0")
	directive(b, "tls-port", strconv.Itoa(port))
	directive(b, "tls-cert-file", t.CertFile)
	directive(b, "tls-key-file", t.KeyFile)
	directive(b, "tls-ca-cert-file", t.CAFile)
	directive(b, "tls-cluster", "yes")
	directive(b, "tls-replication", "yes")
	directive(b, "tls-auth-clients", "optional")
}

// userKeys returns the renderable user keys, sorted by lower-case name then
// by the key as written (so two spellings of one key render in a fixed
// order; the later one wins in the server).
func userKeys(user map[string]string) []string {
	keys := make([]string, 0, len(user))
	for k := range user {
		if valkeyconf.ValidName(k) && !valkeyconf.Owned(k) {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		li, lj := strings.ToLower(keys[i]), strings.ToLower(keys[j])
		if li != lj {
			return li < lj
		}
		return keys[i] < keys[j]
	})
	return keys
}

// directive writes "key value..." with every value quoted.
func directive(b *bytes.Buffer, key string, values ...string) {
	b.WriteString(key)
	for _, v := range values {
		b.WriteByte(' ')
		b.WriteString(QuoteConfigValue(v))
	}
	b.WriteByte('\n')
}

// QuoteConfigValue quotes v for valkey.conf, whose lines are split like
// sdssplitargs: inside double quotes, backslash escapes \" \\ \n \r \t \a \b
// and \xHH are understood. A value without special characters is returned
// as is; any other is quoted with every control or non-ASCII byte escaped,
// so the value stays on one line and reads back byte for byte.
func QuoteConfigValue(v string) string {
	if v != "" && isPlain(v) {
		return v
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		b.WriteString(escapeByte(v[i]))
	}
	b.WriteByte('"')
	return b.String()
}

// isPlain reports whether v needs no quoting.
func isPlain(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("-_.:/@+,=*%", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

func escapeByte(c byte) string {
	switch c {
	case '"':
		return `\"`
	case '\\':
		return `\\`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	if c < 0x20 || c >= 0x7f {
		return fmt.Sprintf(`\x%02x`, c)
	}
	return string(c)
}
