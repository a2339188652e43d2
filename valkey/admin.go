package valkey

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ConfigGet returns the configuration parameters matching pattern.
func (c *Client) ConfigGet(ctx context.Context, pattern string) (map[string]string, error) {
	v, err := c.value(ctx, "CONFIG", "GET", pattern)
	if err != nil {
		return nil, fmt.Errorf("config get %s: %w", pattern, err)
	}
	m, err := stringMap(v)
	if err != nil {
		return nil, fmt.Errorf("config get %s: %w", pattern, err)
	}
	return m, nil
}

// ConfigSet sets all pairs with one CONFIG SET (keys sorted), which the
// server applies atomically: either every value is taken or none is. Values
// of keys that hold credentials (their name contains "auth" or "pass") are
// removed from error messages.
func (c *Client) ConfigSet(ctx context.Context, kv map[string]string) error {
	if len(kv) == 0 {
		return nil
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := []string{"CONFIG", "SET"}
	secrets := make([]string, 0, len(kv))
	for _, k := range keys {
		args = append(args, k, kv[k])
		if isSecretKey(k) {
			secrets = append(secrets, kv[k])
		}
	}
	if err := c.okSecret(ctx, secrets, args...); err != nil {
		return fmt.Errorf("config set %s: %w", strings.Join(keys, " "), err)
	}
	return nil
}

// isSecretKey reports whether a config key holds a credential (masterauth,
// primaryauth, requirepass, tls-key-file-pass, ...).
func isSecretKey(k string) bool {
	k = strings.ToLower(k)
	return strings.Contains(k, "auth") || strings.Contains(k, "pass")
}

// ACLLoad reloads the server's ACL file. The server refuses a bad file whole
// and keeps the users it had.
func (c *Client) ACLLoad(ctx context.Context) error {
	if err := c.ok(ctx, "ACL", "LOAD"); err != nil {
		return fmt.Errorf("acl load: %w", err)
	}
	return nil
}

// ACLSetUser creates or changes the user with the given rules. Password rules
// (">pw", "<pw", "#hash", "!hash") are removed from error messages.
func (c *Client) ACLSetUser(ctx context.Context, name string, rules ...string) error {
	args := append([]string{"ACL", "SETUSER", name}, rules...)
	if err := c.okSecret(ctx, aclSecrets(rules), args...); err != nil {
		return fmt.Errorf("acl setuser %s: %w", name, err)
	}
	return nil
}

// aclSecrets lists the rules of ACL SETUSER that carry a password or a hash,
// with and without their prefix.
func aclSecrets(rules []string) []string {
	var out []string
	for _, r := range rules {
		if len(r) > 1 && strings.ContainsRune("><#!", rune(r[0])) {
			out = append(out, r, r[1:])
		}
	}
	return out
}

// ACLDelUser deletes the users; unknown names are ignored.
func (c *Client) ACLDelUser(ctx context.Context, names ...string) error {
	if len(names) == 0 {
		return nil
	}
	if _, err := c.integer(ctx, append([]string{"ACL", "DELUSER"}, names...)...); err != nil {
		return fmt.Errorf("acl deluser %s: %w", strings.Join(names, " "), err)
	}
	return nil
}

// ACLGetUser returns the rules of the user, or an error wrapping
// ErrNoSuchUser.
func (c *Client) ACLGetUser(ctx context.Context, name string) (ACLUser, error) {
	v, err := c.value(ctx, "ACL", "GETUSER", name)
	if err != nil {
		return ACLUser{}, fmt.Errorf("acl getuser %s: %w", name, err)
	}
	if v == nil {
		return ACLUser{}, fmt.Errorf("acl getuser %s: %w", name, ErrNoSuchUser)
	}
	u, err := ParseACLUser(v)
	if err != nil {
		return ACLUser{}, fmt.Errorf("acl getuser %s: %w", name, err)
	}
	u.Name = name
	return u, nil
}

// ACLList returns the users as ACL rule lines ("user <name> on ...").
func (c *Client) ACLList(ctx context.Context) ([]string, error) {
	v, err := c.value(ctx, "ACL", "LIST")
	if err != nil {
		return nil, fmt.Errorf("acl list: %w", err)
	}
	lines, err := stringList(v)
	if err != nil {
		return nil, fmt.Errorf("acl list: %w", err)
	}
	return lines, nil
}

// ACLWhoAmI returns the user of the connection.
func (c *Client) ACLWhoAmI(ctx context.Context) (string, error) {
	s, err := c.str(ctx, "ACL", "WHOAMI")
	if err != nil {
		return "", fmt.Errorf("acl whoami: %w", err)
	}
	return s, nil
}

// ACLPasswordHash returns the SHA-256 hex digest under which the server
// stores a password (as listed by ACL GETUSER and usable as a "#hash" rule).
func ACLPasswordHash(password string) string {
	sum := sha256.Sum256([]byte(password))
	return hex.EncodeToString(sum[:])
}

// ClientConn is one connection of CLIENT LIST.
type ClientConn struct {
	ID   string
	Addr string
	User string
	// Flags as the server lists them: "N" a normal client, "S" a replica, "M" its
	// primary, ...
	Flags string
	// Idle is how long ago the connection last sent a command; Cmd is that command
	// ("set", "cluster|nodes").
	Idle time.Duration
	Cmd  string
}

// ClientList returns the server's client connections (CLIENT LIST).
func (c *Client) ClientList(ctx context.Context) ([]ClientConn, error) {
	s, err := c.str(ctx, "CLIENT", "LIST")
	if err != nil {
		return nil, err
	}
	return ParseClientList(s), nil
}

// ParseClientList parses the reply of CLIENT LIST: one line per connection of
// space-separated key=value fields.
func ParseClientList(s string) []ClientConn {
	var out []ClientConn
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var cc ClientConn
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "id":
				cc.ID = v
			case "addr":
				cc.Addr = v
			case "user":
				cc.User = v
			case "flags":
				cc.Flags = v
			case "cmd":
				cc.Cmd = v
			case "idle":
				if n, err := strconv.Atoi(v); err == nil {
					cc.Idle = time.Duration(n) * time.Second
				}
			}
		}
		out = append(out, cc)
	}
	return out
}
