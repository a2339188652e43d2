package valkey_test

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// TestTLS runs two servers from a rendered TLS config, forms a one-shard
// cluster over TLS (cluster bus and replication included) and checks that
// the client verifies the certificate against the IP it dials.
func TestTLS(t *testing.T) {
	ca, err := valkeytest.NewCA()
	must(t, err)
	servers := valkeytest.Start(t, 2, valkeytest.Options{TLS: ca})
	primary, replica := servers[0].Dial(t), servers[1].Dial(t)
	ctx := ctxT(t)
	primaryID, err := primary.MyID(ctx)
	must(t, err)
	must(t, primary.Meet(ctx, servers[1].Host, servers[1].Port, 0))
	must(t, primary.AddSlotsRange(ctx, valkey.EvenRanges(1)[0]))
	waitFor(t, 10*time.Second, "the replica to learn the primary", func() (bool, error) {
		err := replica.Replicate(ctxT(t), primaryID)
		return err == nil, err
	})
	waitFor(t, 10*time.Second, "replication over TLS", func() (bool, error) {
		r, err := replica.ReplicationInfo(ctxT(t))
		return err == nil && r.LinkUp, err
	})

	t.Run("plain connection refused", func(t *testing.T) {
		o := servers[0].Options()
		o.TLS, o.DialTimeout = nil, time.Second
		if _, err := valkey.Dial(ctxT(t), o); err == nil {
			t.Fatal("a plain connection to the TLS port succeeded")
		}
	})
	t.Run("unknown CA", func(t *testing.T) {
		other, err := valkeytest.NewCA()
		must(t, err)
		o := servers[0].Options()
		o.TLS = other.ClientTLS()
		if _, err := valkey.Dial(ctxT(t), o); err == nil || valkey.IsServerError(err) {
			t.Fatalf("dial with an unknown CA: %v", err)
		}
	})
	t.Run("certificate for another IP", func(t *testing.T) {
		addr := tlsListener(t, ca, net.ParseIP("127.0.0.2"))
		o := valkey.Options{Addr: addr, TLS: ca.ClientTLS(), DialTimeout: time.Second}
		if _, err := valkey.Dial(context.Background(), o); err == nil {
			t.Fatal("dial accepted a certificate issued for 127.0.0.2 at 127.0.0.1")
		}
	})
}

// tlsListener serves TLS on 127.0.0.1 with a certificate for ip and closes
// every connection after the handshake.
func tlsListener(t *testing.T, ca *valkeytest.CA, ip net.IP) string {
	certPEM, keyPEM, err := ca.IssuePEM(ip)
	must(t, err)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	must(t, err)
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	must(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	return l.Addr().String()
}
