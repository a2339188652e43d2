package certs

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// liveCluster is a TLS cluster of real valkey-server processes (valkeytest) whose
// certificate files the test rewrites, as the kubelet rewrites a pod's mounted Secret.
type liveCluster struct {
	t       *testing.T
	servers []*valkeytest.Server
	clients []*valkey.Client
	trust   *x509.CertPool
}

// startLive starts n TLS servers and gives them the certificate data (replacing the
// files valkeytest wrote); the test trusts the CAs of trust.
func startLive(t *testing.T, n int, data map[string][]byte, trust ...*testCA) *liveCluster {
	t.Helper()
	boot, err := valkeytest.NewCA()
	must(t, err)
	lc := &liveCluster{t: t, trust: x509.NewCertPool()}
	lc.trust.AppendCertsFromPEM(boot.PEM)
	for _, ca := range trust {
		lc.trust.AppendCertsFromPEM(ca.PEM)
	}
	for _, s := range valkeytest.Start(t, n, valkeytest.Options{TLS: boot}) {
		lc.add(s, data)
	}
	return lc
}

// add writes data into a started server's files, reloads it and keeps a client.
func (lc *liveCluster) add(s *valkeytest.Server, data map[string][]byte) int {
	lc.t.Helper()
	o := s.Options()
	o.TLS = valkey.VerifyChainOnly(lc.trust)
	c, err := valkey.Dial(ctxT(lc.t), o)
	must(lc.t, err)
	lc.t.Cleanup(c.Close)
	lc.servers = append(lc.servers, s)
	lc.clients = append(lc.clients, c)
	i := len(lc.servers) - 1
	lc.write(i, data)
	must(lc.t, Reload(ctxT(lc.t), c, lc.files(i)))
	return i
}

// files are the certificate files of server i.
func (lc *liveCluster) files(i int) valkey.TLSFiles {
	dir := lc.servers[i].Dir
	return valkey.TLSFiles{CertFile: filepath.Join(dir, KeyCert), KeyFile: filepath.Join(dir, KeyKey), CAFile: filepath.Join(dir, KeyCA)}
}

// write replaces the certificate files of server i (the server does not notice).
func (lc *liveCluster) write(i int, data map[string][]byte) {
	lc.t.Helper()
	f := lc.files(i)
	for path, b := range map[string][]byte{f.CertFile: data[KeyCert], f.KeyFile: data[KeyKey], f.CAFile: data[KeyCA]} {
		must(lc.t, os.WriteFile(path, b, 0o600))
	}
}

// form meets the first n servers and gives each an even share of the slots.
func (lc *liveCluster) form(n int) {
	lc.t.Helper()
	ctx := ctxT(lc.t)
	for _, s := range lc.servers[1:n] {
		must(lc.t, lc.clients[0].Meet(ctx, s.Host, s.Port, 0))
	}
	for i, r := range valkey.EvenRanges(n) {
		must(lc.t, lc.clients[i].AddSlotsRange(ctx, r))
	}
	lc.waitConnected(lc.t, n)
}

// join gives server i the certificate data and meets it: its bus links to every
// member are new TLS connections.
func (lc *liveCluster) join(t testing.TB, i int, data map[string][]byte) {
	t.Helper()
	lc.write(i, data)
	must(t, Reload(ctxT(t), lc.clients[i], lc.files(i)))
	s := lc.servers[i]
	must(t, lc.clients[0].Meet(ctxT(t), s.Host, s.Port, 0))
	lc.waitConnected(t, i+1)
}

// waitConnected waits until the first n servers see n connected members and
// cluster_state:ok.
func (lc *liveCluster) waitConnected(t testing.TB, n int) {
	t.Helper()
	eventually(t, 20*time.Second, fmt.Sprintf("%d members connected over TLS with cluster_state ok", n), func() string {
		for i, c := range lc.clients[:n] {
			if msg := connected(c, n); msg != "" {
				return fmt.Sprintf("server %d: %s", i, msg)
			}
		}
		return ""
	})
}

func connected(c *valkey.Client, n int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	info, err := c.ClusterInfo(ctx)
	if err != nil || info["cluster_state"] != "ok" {
		return fmt.Sprintf("cluster_state %q %v", info["cluster_state"], err)
	}
	nodes, err := c.ClusterNodes(ctx)
	if err != nil || len(nodes) != n {
		return fmt.Sprintf("%d nodes known (%v)", len(nodes), err)
	}
	for _, nd := range nodes {
		if !nd.Myself && (!nd.Connected || nd.Handshake || nd.Fail || nd.PFail) {
			return fmt.Sprintf("link to %s is not up (%v)", nd.Addr(), nd.Flags)
		}
	}
	return ""
}

// probe returns the fingerprint a new handshake with server i shows.
func (lc *liveCluster) probe(i int) string {
	lc.t.Helper()
	leaf, err := valkey.ServedCertificate(ctxT(lc.t), lc.servers[i].Addr(), valkey.VerifyChainOnly(lc.trust), 2*time.Second)
	must(lc.t, err)
	return valkey.Fingerprint(leaf)
}

// links returns the cluster bus links of server i with their creation times.
func (lc *liveCluster) links(i int) map[string]int64 {
	lc.t.Helper()
	v, err := lc.clients[i].DoValue(ctxT(lc.t), "CLUSTER", "LINKS")
	must(lc.t, err)
	out := map[string]int64{}
	list, _ := v.([]any)
	for _, l := range list {
		f := fields(l)
		out[fmt.Sprint(f["direction"], " ", f["node"])], _ = strconv.ParseInt(fmt.Sprint(f["create-time"]), 10, 64)
	}
	return out
}

// fields reads a CLUSTER LINKS entry (a flat list or a map) into a map.
func fields(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	out := map[string]any{}
	l, _ := v.([]any)
	for i := 0; i+1 < len(l); i += 2 {
		out[fmt.Sprint(l[i])] = l[i+1]
	}
	return out
}

// watch checks cluster_state:ok and a write and read on every server of the first n
// every 50 ms until stop is called, and returns the first failure seen.
func (lc *liveCluster) watch(n int) (stop func() string) {
	var (
		first  atomic.Value
		done   = make(chan struct{})
		wg     sync.WaitGroup
		ranges = valkey.EvenRanges(n)
	)
	clients := append([]*valkey.Client(nil), lc.clients[:n]...)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = keyIn(ranges[i][0])
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for round := 0; ; round++ {
			for i, c := range clients {
				if msg := checkServer(c, keys[i], round); msg != "" {
					first.CompareAndSwap(nil, fmt.Sprintf("server %d, round %d: %s", i, round, msg))
				}
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() string {
		close(done)
		wg.Wait()
		if v := first.Load(); v != nil {
			return v.(string)
		}
		return ""
	}
}

// checkServer checks cluster_state and writes then reads a key the server owns.
func checkServer(c *valkey.Client, key string, round int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	info, err := c.ClusterInfo(ctx)
	if err != nil || info["cluster_state"] != "ok" {
		return fmt.Sprintf("cluster_state %q (%v)", info["cluster_state"], err)
	}
	val := strconv.Itoa(round)
	if _, err := c.Do(ctx, "SET", key, val); err != nil {
		return "write: " + err.Error()
	}
	if got, err := c.Do(ctx, "GET", key); err != nil || got != val {
		return fmt.Sprintf("read %q (%v), want %q", got, err, val)
	}
	return ""
}

// keyIn returns a key whose slot is in r.
func keyIn(r valkey.SlotRange) string {
	for i := 0; ; i++ {
		k := "k" + strconv.Itoa(i)
		if s := valkey.KeySlot(k); s >= r.Start && s <= r.End {
			return k
		}
	}
}

// TestLiveReload runs the reload against real servers forming a TLS cluster (bus and
// replication over TLS): a new certificate is served to new connections after CONFIG
// SET and not before; existing client connections and bus links stay up; new bus and
// replication links work with the new certificate; a mismatched pair is refused and
// the old certificate kept; and a CA changes in steps with a bundle while the cluster
// serves.
func TestLiveReload(t *testing.T) {
	names := []string{"vk.ns.svc"}
	ca, next := newTestCA(t, "ca"), newTestCA(t, "next")
	issue := func(by *testCA, caPEM []byte) map[string][]byte {
		c, k := by.issue(t, leafOpts{dns: names, ips: []net.IP{net.ParseIP("127.0.0.1")}})
		d := secretData(caPEM, c, k)
		if v := Check(d, names, time.Now()); !v.Accepted() {
			t.Fatalf("test certificate refused: %v", v.Refusal)
		}
		return d
	}
	first := issue(ca, ca.PEM)
	// Members 0-2 form the cluster; 3 joins as a replica, 4 and 5 join during the CA
	// change. One start, so they share the replication password.
	const members = 3
	lc := startLive(t, 6, first, ca, next)
	lc.form(members)
	stop := lc.watch(members)
	defer func() {
		if msg := stop(); msg != "" {
			t.Errorf("the cluster did not keep serving: %s", msg)
		}
	}()
	fp := func(d map[string][]byte) string { c, _ := Parse(d); return c.Fingerprint }
	linksBefore := lc.links(0)

	second := issue(ca, ca.PEM)
	t.Run("served only after the reload, connections and links kept", func(t *testing.T) {
		for i := range members {
			lc.write(i, second)
			if got := lc.probe(i); got != fp(first) {
				t.Fatalf("server %d serves %s before any reload, want the old %s", i, got, fp(first))
			}
			must(t, Reload(ctxT(t), lc.clients[i], lc.files(i)))
			if got := lc.probe(i); got != fp(second) {
				t.Fatalf("server %d serves %s after the reload, want %s", i, got, fp(second))
			}
			must(t, lc.clients[i].Ping(ctxT(t))) // the connection opened before is still usable
		}
		if after := lc.links(0); !sameLinks(linksBefore, after) {
			t.Errorf("cluster bus links were re-established by the reload:\nbefore %v\nafter  %v", linksBefore, after)
		}
	})

	t.Run("new bus and replication links use the new certificate", func(t *testing.T) {
		const i = members
		lc.join(t, i, second)
		primaryID, err := lc.clients[0].MyID(ctxT(t))
		must(t, err)
		must(t, lc.clients[i].Replicate(ctxT(t), primaryID))
		eventually(t, 20*time.Second, "replication over TLS with the new certificate", func() string {
			r, err := lc.clients[i].ReplicationInfo(ctxT(t))
			if err != nil || !r.LinkUp {
				return fmt.Sprintf("link up %v (%v)", r.LinkUp, err)
			}
			return ""
		})
	})

	t.Run("a mismatched pair is refused and the old certificate kept", func(t *testing.T) {
		third := issue(ca, ca.PEM)
		bad := secretData(ca.PEM, third[KeyCert], second[KeyKey])
		lc.write(0, bad)
		err := Reload(ctxT(t), lc.clients[0], lc.files(0))
		if _, ok := valkey.ServerMessage(err); !ok {
			t.Fatalf("reload of a mismatched pair: %v, want a server error", err)
		}
		if got := lc.probe(0); got != fp(second) {
			t.Fatalf("server serves %s after a refused reload, want the old %s", got, fp(second))
		}
		lc.write(0, second)
		must(t, Reload(ctxT(t), lc.clients[0], lc.files(0)))
	})

	t.Run("CA change in steps with a bundle", func(t *testing.T) {
		bundle := concat(ca.PEM, next.PEM)
		steps := []struct {
			name string
			data map[string][]byte
		}{
			{"ca.crt holds both CAs", secretData(bundle, second[KeyCert], second[KeyKey])},
			{"certificates of the new CA", issue(next, bundle)},
			{"ca.crt holds the new CA only", nil},
		}
		steps[2].data = secretData(next.PEM, steps[1].data[KeyCert], steps[1].data[KeyKey])
		joined := members + 1
		for n, st := range steps {
			for i := range joined {
				lc.write(i, st.data)
				must(t, Reload(ctxT(t), lc.clients[i], lc.files(i)))
				if i == 0 && n < 2 {
					// A member joins while the others still run the previous step:
					// its new bus links are accepted both ways.
					lc.join(t, joined, st.data)
					joined++
				}
			}
			if got := lc.probe(1); got != fp(st.data) {
				t.Fatalf("%s: server serves %s, want %s", st.name, got, fp(st.data))
			}
			lc.waitConnected(t, joined)
		}
	})
}

// sameLinks reports whether every link of before still exists with the same creation
// time.
func sameLinks(before, after map[string]int64) bool {
	for k, v := range before {
		if after[k] != v {
			return false
		}
	}
	return len(before) > 0
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// ctxT returns a context bounded by a generous per-step timeout.
func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond every 100 ms until it returns "" or fails after timeout with
// its last answer.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		if last = cond(); last == "" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s: %s", what, last)
}
