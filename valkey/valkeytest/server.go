// Package valkeytest starts real valkey-server processes for tests: cluster
// mode, 127.0.0.1 (or another loopback address), free ports, a temporary
// directory each, an ACL file with the default user off. Every server is
// killed and waited for when the test ends (StartIn's when its caller stops
// it).
//
// The binary is $VALKEY_SERVER, or valkey-server on PATH.
package valkeytest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/valkey"
)

// Users defined in every server's ACL file.
const (
	// AdminUser may run every command.
	AdminUser = "admin"
	// ReplicationUser is what replicas authenticate as to their primary:
	// only the replication commands.
	ReplicationUser = "replication"
)

// startTimeout bounds how long a server may take to accept connections.
const startTimeout = 15 * time.Second

// Options tune the servers of Start.
type Options struct {
	// Config is extra user config for every server (rendered after the
	// operator defaults, so it overrides them). Default: a 2 s cluster node
	// timeout and no RDB snapshots.
	Config map[string]string
	// TLS, when set, makes the servers speak TLS only (clients, cluster bus
	// and replication) with certificates for 127.0.0.1 issued by this CA.
	TLS *CA
	// NodesConf, when set, is the cluster state file each server finds in its
	// directory at start, as a server restarting on its volume does. Its
	// addresses should be loopback ones: the server dials them.
	NodesConf string
	// Host is the loopback address to serve on (default 127.0.0.1). A server
	// on an address of its own (127.0.0.2 and up) also sends from it
	// (bind-source-addr) and announces it (cluster-announce-ip), so its peers
	// and its primary see it at that address, as pods see each other at their
	// pod IPs.
	Host string
	// AdminPassword and ReplicationPassword, when set, are the passwords of
	// AdminUser and ReplicationUser (default: random, shared by the servers of
	// one Start call). Servers started one by one with StartIn that replicate
	// each other need the same ones.
	AdminPassword, ReplicationPassword string
	// Users are extra lines for the ACL file: users the test logs in as.
	Users []string
	// BusRelay puts a relay in front of each server's cluster bus, which CutBus uses to
	// cut the bus between two servers (see busRelay). It needs Host.
	BusRelay bool
}

// Server is one running valkey-server.
type Server struct {
	Host string
	Port int
	// Dir is the server's working directory; ACLFile its users file.
	Dir, ACLFile, ConfigFile, LogFile string
	// AdminPassword is the password of AdminUser (random per Start call,
	// the same on every server of that call).
	AdminPassword string
	// ReplicationPassword is the password of ReplicationUser.
	ReplicationPassword string
	// Version of the binary.
	Version valkey.Version
	// CA issued the server's certificate when it runs with TLS.
	CA *CA

	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
	// bin and opts started the server (opts.Users are extra ACL lines): ready
	// starts it again with them.
	bin  string
	opts Options
	// hadNodesConf: dir held a nodes.conf when the server started (given by
	// Options.NodesConf, or a restart on its volume).
	hadNodesConf bool
	// relay is the relay of its cluster bus (Options.BusRelay), or nil.
	relay *busRelay
}

// Addr returns "host:port".
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Options returns client options that log in as AdminUser (over TLS when
// the server runs with TLS).
func (s *Server) Options() valkey.Options {
	o := valkey.Options{Addr: s.Addr(), Username: AdminUser, Password: s.AdminPassword}
	if s.CA != nil {
		o.TLS = s.CA.ClientTLS()
	}
	return o
}

// Dial connects as AdminUser; the client is closed when the test ends.
func (s *Server) Dial(t testing.TB) *valkey.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := valkey.Dial(ctx, s.Options())
	if err != nil {
		t.Fatalf("dial %s: %v", s.Addr(), err)
	}
	t.Cleanup(c.Close)
	return c
}

// Stop kills the server and waits for it to exit. It is safe to call twice.
func (s *Server) Stop() {
	s.once.Do(func() {
		_ = s.cmd.Process.Kill()
		<-s.done
		if s.relay != nil {
			s.relay.close()
		}
	})
}

// Freeze stops the process without ending it (SIGSTOP), as a node that stops
// scheduling it would: its connections stay open and nothing answers on them.
func (s *Server) Freeze() error { return s.cmd.Process.Signal(syscall.SIGSTOP) }

// Thaw lets a frozen process run again (SIGCONT).
func (s *Server) Thaw() error { return s.cmd.Process.Signal(syscall.SIGCONT) }

// Running reports whether the process has not exited.
func (s *Server) Running() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// LogTail returns the last n lines of the server log.
func (s *Server) LogTail(n int) string {
	b, _ := os.ReadFile(s.LogFile)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Binary returns the valkey-server to run, failing the test when there is
// none.
func Binary(t testing.TB) string {
	t.Helper()
	path, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func binary() (string, error) {
	name := os.Getenv("VALKEY_SERVER")
	if name == "" {
		name = "valkey-server"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("valkey-server not found (%w): install valkey-server (Debian package valkey-server) or set VALKEY_SERVER to its path", err)
	}
	return path, nil
}

var versionRE = regexp.MustCompile(`v=(\d+\.\d+\.\d+)`)

// BinaryVersion runs "valkey-server --version" and parses it.
func BinaryVersion(t testing.TB, bin string) valkey.Version {
	t.Helper()
	v, err := binaryVersion(bin)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func binaryVersion(bin string) (valkey.Version, error) {
	out, err := exec.Command(bin, "--version").CombinedOutput()
	m := versionRE.FindSubmatch(out)
	if err != nil || m == nil {
		return valkey.Version{}, fmt.Errorf("%s --version: %v: %s", bin, err, out)
	}
	v, err := valkey.ParseVersion(string(m[1]))
	if err != nil {
		return valkey.Version{}, fmt.Errorf("%s --version: %w", bin, err)
	}
	return v, nil
}

// Start starts n servers in cluster mode (not yet joined to each other) and
// waits until each accepts connections.
func Start(t testing.TB, n int, o Options) []*Server {
	t.Helper()
	bin := Binary(t)
	version := BinaryVersion(t, bin)
	admin, repl := secretOr(o.AdminPassword), secretOr(o.ReplicationPassword) // shared, as in one cluster
	servers := make([]*Server, n)
	for i := range servers {
		s, err := launch(t.TempDir(), bin, version, admin, repl, o, nil)
		if err != nil {
			t.Fatalf("start valkey-server: %v", err)
		}
		t.Cleanup(s.Stop)
		servers[i] = s
	}
	for i, s := range servers {
		s, err := ready(s)
		if s != nil {
			t.Cleanup(s.Stop) // a server started again on new ports; Stop runs once
			servers[i] = s
		}
		if err != nil {
			t.Fatalf("%v", err)
		}
	}
	return servers
}

// Launch starts one server like Start, but returns the reason it did not come
// up (the end of its log included) instead of failing the test, for tests of
// what a server refuses to start with.
func Launch(t testing.TB, o Options) (*Server, error) {
	t.Helper()
	bin := Binary(t)
	s, err := launch(t.TempDir(), bin, BinaryVersion(t, bin), secretOr(o.AdminPassword), secretOr(o.ReplicationPassword), o, nil)
	if err != nil {
		return nil, err
	}
	s, err = ready(s)
	if s != nil {
		t.Cleanup(s.Stop)
	}
	return s, err
}

// StartIn starts one server in dir, outside of any test's lifetime, and waits until
// it accepts connections: for a stand-in kubelet that starts servers as members
// appear. The caller stops it (Stop); set o's passwords for servers that replicate
// each other.
func StartIn(dir string, o Options) (*Server, error) {
	bin, err := binary()
	if err != nil {
		return nil, err
	}
	version, err := binaryVersion(bin)
	if err != nil {
		return nil, err
	}
	s, err := launch(dir, bin, version, secretOr(o.AdminPassword), secretOr(o.ReplicationPassword), o, nil)
	if err != nil {
		return nil, err
	}
	if s, err = ready(s); err != nil {
		if s != nil {
			s.Stop()
		}
		return nil, err
	}
	return s, nil
}

// portRetries is how many times ready starts a server again on new ports when
// another process bound its port, or its bus port, between freePortPair and the
// server's own bind (the tests of several modules run at once on one machine).
const portRetries = 5

// ready waits until s accepts connections. A server that lost its ports to another
// process is started again in its directory on new ports, without the nodes.conf
// (a node ID of its own) it may have written unless it was started with one. It returns
// the server that came up or, on a failure, the last one (nil when it could not be
// started) with the end of its log in the error.
func ready(s *Server) (*Server, error) {
	for attempt := 0; ; attempt++ {
		err := s.waitReady()
		if err == nil {
			return s, nil
		}
		if !s.lostPort() || attempt == portRetries {
			return s, fmt.Errorf("valkey-server %s: %w\n%s", s.Addr(), err, s.LogTail(20))
		}
		if !s.hadNodesConf {
			_ = os.Remove(filepath.Join(s.Dir, "nodes.conf"))
		}
		if s, err = launch(s.Dir, s.bin, s.Version, s.AdminPassword, s.ReplicationPassword, s.opts, s.relay); err != nil {
			return nil, err
		}
	}
}

// lostPort reports whether the server exited because its port or its bus port was
// already bound.
func (s *Server) lostPort() bool {
	return !s.Running() && s.logContains("Address already in use")
}

// logContains reports whether the server's log holds text.
func (s *Server) logContains(text string) bool {
	b, _ := os.ReadFile(s.LogFile)
	return strings.Contains(string(b), text)
}

// secretOr returns pw, or a random secret when it is empty.
func secretOr(pw string) string {
	if pw != "" {
		return pw
	}
	return randomSecret()
}

// launch writes the files of one server in dir and starts it; the caller stops it.
// launch starts a server in dir; relay is the bus relay of the server it starts again
// (nil for a first start, which makes one when o.BusRelay asks).
func launch(dir, bin string, version valkey.Version, admin, repl string, o Options, relay *busRelay) (_ *Server, err error) {
	host := o.Host
	if host == "" {
		host = "127.0.0.1"
	}
	port, err := portPair(host)
	if err != nil {
		return nil, err
	}
	if relay == nil && o.BusRelay {
		if host == "127.0.0.1" {
			return nil, errors.New("valkeytest: Options.BusRelay needs Options.Host")
		}
		if relay, err = newBusRelay(host); err != nil {
			return nil, fmt.Errorf("bus relay: %w", err)
		}
		defer func() {
			if err != nil {
				relay.close() // made for a start that failed
			}
		}()
	}
	if relay != nil {
		relay.relayTo(host, port+10000)
	}
	s := &Server{Host: host, Port: port, Dir: dir, Version: version,
		AdminPassword: admin, ReplicationPassword: repl, CA: o.TLS, done: make(chan struct{}),
		bin: bin, opts: o, relay: relay}
	if err := s.writeFiles(o); err != nil {
		return nil, err
	}
	_, err = os.Stat(filepath.Join(dir, "nodes.conf"))
	s.hadNodesConf = err == nil
	logf, err := os.Create(s.LogFile)
	if err != nil {
		return nil, fmt.Errorf("create log: %w", err)
	}
	s.cmd = exec.Command(bin, s.ConfigFile)
	s.cmd.Dir = s.Dir
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("run %s: %w", bin, err)
	}
	go func() {
		_ = s.cmd.Wait()
		logf.Close()
		close(s.done)
	}()
	return s, nil
}

// writeFiles writes the ACL file, the primary-auth include and the config.
func (s *Server) writeFiles(o Options) error {
	s.ACLFile = filepath.Join(s.Dir, "users.acl")
	s.ConfigFile = filepath.Join(s.Dir, "valkey.conf")
	s.LogFile = filepath.Join(s.Dir, "valkey.log")
	authFile := filepath.Join(s.Dir, "primaryauth.conf")
	if err := os.WriteFile(s.ACLFile, []byte(s.ACLFileContent()), 0o600); err != nil {
		return fmt.Errorf("write acl file: %w", err)
	}
	if err := os.WriteFile(authFile, []byte("masterauth "+s.ReplicationPassword+"\n"), 0o600); err != nil {
		return fmt.Errorf("write auth include: %w", err)
	}
	if o.NodesConf != "" {
		if err := os.WriteFile(filepath.Join(s.Dir, "nodes.conf"), []byte(o.NodesConf), 0o600); err != nil {
			return fmt.Errorf("write nodes.conf: %w", err)
		}
	}
	user := map[string]string{"cluster-node-timeout": "2000", "save": "", "appendonly": "no"}
	for k, v := range o.Config {
		user[k] = v
	}
	sc := valkey.ServerConfig{
		Port: s.Port, Bind: []string{s.Host}, DataDir: s.Dir, ClusterConfigFile: "nodes.conf",
		ACLFile: s.ACLFile, PrimaryUser: ReplicationUser, PrimaryAuthInclude: authFile,
		Version: s.Version, User: user,
	}
	if s.CA != nil {
		cert, key, ca, err := s.CA.writeTLSFiles(s.Dir, net.ParseIP(s.Host))
		if err != nil {
			return err
		}
		sc.TLS = &valkey.TLSFiles{CertFile: cert, KeyFile: key, CAFile: ca}
	}
	conf := valkey.RenderConfig(sc)
	if s.Host != "127.0.0.1" {
		// Operator-owned keys, so not in User. Outgoing links (cluster bus,
		// replication, MIGRATE) leave from the server's own address, and it
		// announces that address as a pod announces its IP.
		conf = append(conf, []byte("bind-source-addr "+s.Host+"\ncluster-announce-ip "+s.Host+"\n")...)
	}
	if s.relay != nil {
		conf = append(conf, []byte("cluster-announce-bus-port "+strconv.Itoa(s.relay.port())+"\n")...)
	}
	if err := os.WriteFile(s.ConfigFile, conf, 0o600); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

// ACLFileContent returns the users file of the server: default off, an admin,
// and a replication user limited to what a replica sends to its primary.
// From 9.0 on the same user also carries atomic slot migrations: the source
// logs in to the target with primaryuser/primaryauth, runs CLUSTER SYNCSLOTS
// and then replays the slots' data as ordinary write commands (SELECT, SET,
// ...) on every key, so it needs those too.
func (s *Server) ACLFileContent() string {
	repl := "-@all +psync +replconf +ping +sync"
	if s.Version.AtLeast(9, 0) {
		repl += " +cluster|syncslots +select +multi +exec +@write ~*"
	}
	content := "user default off\n" +
		"user " + AdminUser + " on #" + hash(s.AdminPassword) + " ~* &* +@all\n" +
		"user " + ReplicationUser + " on #" + hash(s.ReplicationPassword) + " " + repl + "\n"
	for _, u := range s.opts.Users {
		content += u + "\n"
	}
	return content
}

func hash(pw string) string {
	sum := sha256.Sum256([]byte(pw))
	return hex.EncodeToString(sum[:])
}

func randomSecret() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// portPair is freePortPair, or a test's stand-in that hands out a port already taken.
var portPair = freePortPair

// freePortPair finds a port P such that P and the cluster bus port P+10000
// are both free on host.
func freePortPair(host string) (int, error) {
	for range 200 {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return 0, fmt.Errorf("find a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if port+10000 > 65535 {
			l.Close()
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port+10000)))
		l.Close()
		if err != nil {
			continue
		}
		bus.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free port pair (P, P+10000) on %s", host)
}

// readyLine is what a server logs once it listens.
const readyLine = "Ready to accept connections"

// waitReady waits until the server has logged that it listens and accepts a
// connection. The log line tells it from another process holding its port, which a
// dial alone would reach.
func (s *Server) waitReady() error {
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		if !s.Running() {
			return errors.New("exited during start")
		}
		if s.logContains(readyLine) {
			conn, err := net.DialTimeout("tcp", s.Addr(), 200*time.Millisecond)
			if err == nil {
				conn.Close()
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("not listening after %s", startTimeout)
}
