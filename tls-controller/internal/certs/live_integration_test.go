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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// liveCluster is a TLS cluster of real valkey-server processes (valkeytest) whose
// certificate files the test rewrites, as the kubelet rewrites a pod's mounted Secret.
type liveCluster struct {
	servers []*valkeytest.Server
	clients []*valkey.Client
	trust   *x509.CertPool
}

// startLive starts n TLS servers and gives them the certificate data (replacing the
// files valkeytest wrote); the test trusts the CAs of trust. The servers stop when the
// node that started them ends (BeforeAll: its container).
func startLive(n int, data map[string][]byte, trust ...*testCA) *liveCluster {
	GinkgoHelper()
	boot, err := valkeytest.NewCA()
	Expect(err).NotTo(HaveOccurred())
	lc := &liveCluster{trust: x509.NewCertPool()}
	lc.trust.AppendCertsFromPEM(boot.PEM)
	for _, ca := range trust {
		lc.trust.AppendCertsFromPEM(ca.PEM)
	}
	for _, s := range valkeytest.Start(GinkgoTB(), n, valkeytest.Options{TLS: boot}) {
		lc.add(s, data)
	}
	return lc
}

// add writes data into a started server's files, reloads it and keeps a client.
func (lc *liveCluster) add(s *valkeytest.Server, data map[string][]byte) int {
	GinkgoHelper()
	o := s.Options()
	o.TLS = valkey.VerifyChainOnly(lc.trust)
	c, err := valkey.Dial(suite.Step(), o)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(c.Close)
	lc.servers = append(lc.servers, s)
	lc.clients = append(lc.clients, c)
	i := len(lc.servers) - 1
	lc.write(i, data)
	Expect(Reload(suite.Step(), c, lc.files(i))).To(Succeed())
	return i
}

// files are the certificate files of server i.
func (lc *liveCluster) files(i int) valkey.TLSFiles {
	dir := lc.servers[i].Dir
	return valkey.TLSFiles{CertFile: filepath.Join(dir, KeyCert), KeyFile: filepath.Join(dir, KeyKey), CAFile: filepath.Join(dir, KeyCA)}
}

// write replaces the certificate files of server i (the server does not notice).
func (lc *liveCluster) write(i int, data map[string][]byte) {
	GinkgoHelper()
	f := lc.files(i)
	for path, b := range map[string][]byte{f.CertFile: data[KeyCert], f.KeyFile: data[KeyKey], f.CAFile: data[KeyCA]} {
		Expect(os.WriteFile(path, b, 0o600)).To(Succeed())
	}
}

// form meets the first n servers and gives each an even share of the slots.
func (lc *liveCluster) form(n int) {
	GinkgoHelper()
	ctx := suite.Step()
	for _, s := range lc.servers[1:n] {
		Expect(lc.clients[0].Meet(ctx, s.Host, s.Port, 0)).To(Succeed())
	}
	for i, r := range valkey.EvenRanges(n) {
		Expect(lc.clients[i].AddSlotsRange(ctx, r)).To(Succeed())
	}
	lc.waitConnected(n)
}

// join gives server i the certificate data and meets it: its bus links to every
// member are new TLS connections.
func (lc *liveCluster) join(i int, data map[string][]byte) {
	GinkgoHelper()
	lc.write(i, data)
	Expect(Reload(suite.Step(), lc.clients[i], lc.files(i))).To(Succeed())
	s := lc.servers[i]
	Expect(lc.clients[0].Meet(suite.Step(), s.Host, s.Port, 0)).To(Succeed())
	lc.waitConnected(i + 1)
}

// waitConnected waits until the first n servers see n connected members and
// cluster_state:ok.
func (lc *liveCluster) waitConnected(n int) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		for i, c := range lc.clients[:n] {
			expectConnected(g, c, n, i)
		}
	}).Should(Succeed(), "%d members connected over TLS with cluster_state ok", n)
}

// expectConnected checks that server i says cluster_state ok and has up links to the
// other n-1 members.
func expectConnected(g Gomega, c *valkey.Client, n, i int) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	g.Expect(c.ClusterInfo(ctx)).To(HaveKeyWithValue("cluster_state", "ok"), "server %d", i)
	nodes, err := c.ClusterNodes(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(nodes).To(HaveLen(n), "nodes server %d knows", i)
	for _, nd := range nodes {
		if !nd.Myself {
			g.Expect(nd.Connected && !nd.Handshake && !nd.Fail && !nd.PFail).To(BeTrue(), "server %d: link to %s is not up (%v)", i, nd.Addr(), nd.Flags)
		}
	}
}

// probe returns the fingerprint a new handshake with server i shows.
func (lc *liveCluster) probe(i int) string {
	GinkgoHelper()
	leaf, err := valkey.ServedCertificate(suite.Step(), lc.servers[i].Addr(), valkey.VerifyChainOnly(lc.trust), 2*time.Second)
	Expect(err).NotTo(HaveOccurred())
	return valkey.Fingerprint(leaf)
}

// links returns the cluster bus links of server i with their creation times.
func (lc *liveCluster) links(i int) map[string]int64 {
	GinkgoHelper()
	v, err := lc.clients[i].DoValue(suite.Step(), "CLUSTER", "LINKS")
	Expect(err).NotTo(HaveOccurred())
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
// every 50 ms until stop is called, and returns the first failure seen. Stop may be
// called more than once.
func (lc *liveCluster) watch(n int) (stop func() string) {
	var (
		first  atomic.Value
		done   = make(chan struct{})
		once   sync.Once
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
		once.Do(func() { close(done) })
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

// The reload against real servers forming a TLS cluster (bus and replication over
// TLS): a new certificate is served to new connections after CONFIG SET and not before;
// existing client connections and bus links stay up; new bus and replication links work
// with the new certificate; a mismatched pair is refused and the old certificate kept;
// and a CA changes in steps with a bundle while the cluster serves.
var _ = Describe("A live reload of the certificate", Ordered, func() {
	names := []string{"vk.ns.svc"}
	// Members 0-2 form the cluster; 3 joins as a replica, 4 and 5 join during the CA
	// change. One start, so they share the replication password.
	const members = 3
	var (
		ca, next    *testCA
		issue       func(by *testCA, caPEM []byte) map[string][]byte
		lc          *liveCluster
		stop        func() string
		first       map[string][]byte
		second      map[string][]byte
		linksBefore map[string]int64
	)
	fp := func(d map[string][]byte) string { c, _ := Parse(d); return c.Fingerprint }
	BeforeAll(func() {
		ca, next = newTestCA(GinkgoTB(), "ca"), newTestCA(GinkgoTB(), "next")
		issue = func(by *testCA, caPEM []byte) map[string][]byte {
			c, k := by.issue(GinkgoTB(), leafOpts{dns: names, ips: []net.IP{net.ParseIP("127.0.0.1")}})
			d := secretData(caPEM, c, k)
			v := Check(d, names, time.Now())
			Expect(v.Accepted()).To(BeTrue(), "test certificate refused: %v", v.Refusal)
			return d
		}
		first = issue(ca, ca.PEM)
		lc = startLive(6, first, ca, next)
		lc.form(members)
		stop = lc.watch(members)
		DeferCleanup(func() { stop() })
		linksBefore = lc.links(0)
		second = issue(ca, ca.PEM)
	})

	It("is served only after the reload, keeping connections and links", func() {
		for i := range members {
			lc.write(i, second)
			Expect(lc.probe(i)).To(Equal(fp(first)), "server %d before any reload serves the old certificate", i)
			Expect(Reload(suite.Step(), lc.clients[i], lc.files(i))).To(Succeed())
			Expect(lc.probe(i)).To(Equal(fp(second)), "server %d after the reload", i)
			Expect(lc.clients[i].Ping(suite.Step())).To(Succeed(), "the connection opened before is still usable")
		}
		Expect(sameLinks(linksBefore, lc.links(0))).To(BeTrue(), "cluster bus links were re-established by the reload")
	})

	It("is used by new bus and replication links", func() {
		const i = members
		lc.join(i, second)
		primaryID, err := lc.clients[0].MyID(suite.Step())
		Expect(err).NotTo(HaveOccurred())
		Expect(lc.clients[i].Replicate(suite.Step(), primaryID)).To(Succeed())
		Eventually(func() (valkey.Replication, error) { return lc.clients[i].ReplicationInfo(suite.Step()) }).
			Should(HaveField("LinkUp", BeTrue()), "replication over TLS with the new certificate")
	})

	It("refuses a mismatched pair and keeps the old certificate", func() {
		third := issue(ca, ca.PEM)
		bad := secretData(ca.PEM, third[KeyCert], second[KeyKey])
		lc.write(0, bad)
		err := Reload(suite.Step(), lc.clients[0], lc.files(0))
		_, isServerError := valkey.ServerMessage(err)
		Expect(isServerError).To(BeTrue(), "reload of a mismatched pair: %v, want a server error", err)
		Expect(lc.probe(0)).To(Equal(fp(second)), "the server after a refused reload")
		lc.write(0, second)
		Expect(Reload(suite.Step(), lc.clients[0], lc.files(0))).To(Succeed())
	})

	It("changes the CA in steps with a bundle", func() {
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
				Expect(Reload(suite.Step(), lc.clients[i], lc.files(i))).To(Succeed())
				if i == 0 && n < 2 {
					// A member joins while the others still run the previous step:
					// its new bus links are accepted both ways.
					lc.join(joined, st.data)
					joined++
				}
			}
			Expect(lc.probe(1)).To(Equal(fp(st.data)), st.name)
			lc.waitConnected(joined)
		}
	})

	It("kept the cluster serving throughout", func() {
		Expect(stop()).To(BeEmpty(), "the cluster did not keep serving")
	})
})

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
