package localkube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

// FreePort asks the kernel for a TCP port of loopback that nothing listens on now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func freePorts(n int) ([]int, error) {
	out := make([]int, n)
	for i := range out {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

func (c Config) pki(f string) string { return c.path("pki", f) }

func (c Config) etcdDaemon(client, peer int) daemon {
	cu := fmt.Sprintf("http://127.0.0.1:%d", client)
	pu := fmt.Sprintf("http://127.0.0.1:%d", peer)
	return daemon{Name: "etcd", Args: []string{c.bin("etcd"),
		"--name=local", "--data-dir=" + c.path("etcd"),
		"--listen-client-urls=" + cu, "--advertise-client-urls=" + cu,
		"--listen-peer-urls=" + pu, "--initial-advertise-peer-urls=" + pu,
		"--initial-cluster=local=" + pu,
		"--listen-metrics-urls=http://127.0.0.1:0",
		"--unsafe-no-fsync=true", "--log-level=warn"}}
}

func (c Config) apiserverDaemon(etcdPort int, auditLog string) daemon {
	return daemon{Name: "kube-apiserver", Args: []string{c.bin("kube-apiserver"),
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", etcdPort),
		"--bind-address=" + BridgeIP, "--advertise-address=" + BridgeIP,
		"--secure-port=" + strconv.Itoa(APIServerPort),
		"--tls-cert-file=" + c.pki("apiserver.crt"), "--tls-private-key-file=" + c.pki("apiserver.key"),
		"--client-ca-file=" + c.pki("ca.crt"),
		"--kubelet-client-certificate=" + c.pki("apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + c.pki("apiserver-kubelet-client.key"),
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--service-account-key-file=" + c.pki("sa.pub"),
		"--service-account-signing-key-file=" + c.pki("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc." + ClusterDomain,
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--requestheader-client-ca-file=" + c.pki("front-proxy-ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + c.pki("front-proxy-client.crt"),
		"--proxy-client-key-file=" + c.pki("front-proxy-client.key"),
		// Webhooks and aggregated APIs are reached at their endpoints' pod IPs: the host
		// routes to pods but has no kube-proxy for service IPs.
		"--enable-aggregator-routing=true",
		"--authorization-mode=Node,RBAC",
		// As on OpenShift: setting blockOwnerDeletion on an owner reference needs the
		// right to update the owner's finalizers, which no audit event shows, so the
		// suites themselves check the components have it.
		"--enable-admission-plugins=OwnerReferencesPermissionEnforcement",
		// Every request of a service account outside kube-system, at Metadata level: the
		// RBAC check compares what the operator's components used with their rules.
		"--audit-policy-file=" + c.path("audit-policy.yaml"),
		"--audit-log-path=" + auditLog,
		"--audit-log-format=json",
		"--audit-log-maxsize=200", "--audit-log-maxbackup=1",
		"--allow-privileged=true",
		"--profiling=false",
		"--v=1"}}
}

// auditPolicy logs the requests of service accounts, except the control plane's own
// (kube-controller-manager runs its controllers as service accounts of kube-system), at
// Metadata level: who, verb, resource, namespace and name, never a body.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  userGroups: ["system:serviceaccounts:kube-system"]
- level: Metadata
  userGroups: ["system:serviceaccounts"]
- level: None
`

func (c Config) controllerManagerDaemon(port int) daemon {
	kc := c.path("kubeconfigs", "controller-manager.kubeconfig")
	return daemon{Name: "kube-controller-manager", Args: []string{c.bin("kube-controller-manager"),
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--controllers=*",
		"--service-account-private-key-file=" + c.pki("sa.key"), "--root-ca-file=" + c.pki("ca.crt"),
		"--cluster-signing-cert-file=" + c.pki("ca.crt"), "--cluster-signing-key-file=" + c.pki("ca.key"),
		"--use-service-account-credentials=true",
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--node-monitor-period=" + nodeMonitorPeriod,
		"--node-monitor-grace-period=" + nodeMonitorGracePeriod,
		"--leader-elect=false", "--profiling=false", "--v=1"}}
}

func (c Config) schedulerDaemon(port int) daemon {
	kc := c.path("kubeconfigs", "scheduler.kubeconfig")
	return daemon{Name: "kube-scheduler", Args: []string{c.bin("kube-scheduler"),
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--leader-elect=false", "--profiling=false", "--v=1"}}
}

// corefile serves cluster names only: there is no forward plugin, so a name outside the
// cluster gets an answer from here and no query leaves the machine.
func (c Config) corefile() string {
	return fmt.Sprintf(`.:53 {
    bind %s
    errors
    kubernetes %s in-addr.arpa ip6.arpa {
        kubeconfig %s
        pods insecure
        ttl 5
    }
    cache 5
}
`, BridgeIP, ClusterDomain, c.path("kubeconfigs", "coredns.kubeconfig"))
}

func (c Config) corednsDaemon() daemon {
	return daemon{Name: "coredns", Args: []string{c.CoreDNSBinary(), "-conf", c.path("Corefile")}}
}

// apiClient is an HTTPS client authenticated as the cluster admin.
func (c Config) apiClient() (*http.Client, error) {
	caPEM, err := os.ReadFile(c.pki("ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair(c.pki("admin.crt"), c.pki("admin.key"))
	if err != nil {
		return nil, err
	}
	return &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}}, nil
}

// apiGet fetches a path from the API server as admin and returns the status and body.
func (c Config) apiGet(ctx context.Context, path string) (int, string, error) {
	hc, err := c.apiClient()
	if err != nil {
		return 0, "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://%s:%d%s", BridgeIP, APIServerPort, path), nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func (c Config) waitAPIReady(ctx context.Context, timeout time.Duration) error {
	return waitFor(ctx, timeout, 100*time.Millisecond, "kube-apiserver /readyz", func() (bool, error) {
		code, body, err := c.apiGet(ctx, "/readyz")
		if err != nil {
			return false, err
		}
		if code != http.StatusOK {
			return false, fmt.Errorf("readyz %d: %s", code, body)
		}
		return true, nil
	})
}
