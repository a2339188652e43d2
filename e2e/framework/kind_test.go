package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func kindNode(name, ip string, cidrs ...string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if ip != "" {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}, {Type: corev1.NodeInternalIP, Address: ip}}
	}
	if len(cidrs) > 0 {
		n.Spec.PodCIDR, n.Spec.PodCIDRs = cidrs[0], cidrs
	}
	return n
}

func TestPodRoutes(t *testing.T) {
	tests := []struct {
		name    string
		nodes   []corev1.Node
		want    []Route
		wantErr string
	}{
		{
			name: "one route per node, sorted by name",
			nodes: []corev1.Node{
				kindNode("valkey-e2e-worker2", "172.18.0.3", "10.244.2.0/24"),
				kindNode("valkey-e2e-control-plane", "172.18.0.2", "10.244.0.0/24"),
				kindNode("valkey-e2e-worker", "172.18.0.4", "10.244.1.0/24"),
			},
			want: []Route{
				{Node: "valkey-e2e-control-plane", CIDR: "10.244.0.0/24", Via: "172.18.0.2"},
				{Node: "valkey-e2e-worker", CIDR: "10.244.1.0/24", Via: "172.18.0.4"},
				{Node: "valkey-e2e-worker2", CIDR: "10.244.2.0/24", Via: "172.18.0.3"},
			},
		},
		{
			name:  "dual stack keeps IPv4 only",
			nodes: []corev1.Node{kindNode("w", "172.18.0.5", "fd00:10:244:1::/64", "10.244.1.0/24")},
			want:  []Route{{Node: "w", CIDR: "10.244.1.0/24", Via: "172.18.0.5"}},
		},
		{
			name:  "podCIDR without podCIDRs",
			nodes: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "old"}, Spec: corev1.NodeSpec{PodCIDR: "10.244.3.0/24"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "172.18.0.9"}}}}},
			want:  []Route{{Node: "old", CIDR: "10.244.3.0/24", Via: "172.18.0.9"}},
		},
		{name: "no pod CIDR", nodes: []corev1.Node{kindNode("w", "172.18.0.5")}, wantErr: "no IPv4 pod CIDR"},
		{name: "no InternalIP", nodes: []corev1.Node{kindNode("w", "", "10.244.1.0/24")}, wantErr: "no IPv4 InternalIP"},
		{name: "IPv6 InternalIP only", nodes: []corev1.Node{kindNode("w", "fc00::5", "10.244.1.0/24")}, wantErr: "no IPv4 InternalIP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PodRoutes(tt.nodes)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// newTestKind returns a kind provider with a fake runner, a cache holding a manifest
// and the given nodes.
func newTestKind(t *testing.T, nodes []corev1.Node) (*KindProvider, *fakeRunner) {
	t.Helper()
	cache := t.TempDir()
	writeManifest(t, cache)
	r := newFakeRunner()
	p := NewKindProvider(ProviderOptions{Paths: Paths{CacheDir: cache}, Runner: r, Getenv: getenvFrom(map[string]string{"E2E_KIND_CLUSTER": "vk"})})
	p.listNodes = func(context.Context) ([]corev1.Node, error) { return nodes, nil }
	return p, r
}

func TestKindRoutesAndImagesCommands(t *testing.T) {
	nodes := []corev1.Node{
		kindNode("vk-worker", "172.18.0.3", "10.244.1.0/24"),
		kindNode("vk-control-plane", "172.18.0.2", "10.244.0.0/24"),
	}
	nodes[1].Labels = map[string]string{ControlPlaneLabel: ""}
	p, r := newTestKind(t, nodes)
	ctx := context.Background()
	if err := p.loadManifestImages(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	if err := p.addPodRoutes(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	if err := p.Destroy(ctx); err != nil { // not created here: routes go, the cluster stays
		t.Fatal(err)
	}
	cache := p.opts.Paths.CacheDir
	want := []string{
		"kind load image-archive --name vk " + cache + "/images/valkey-8.0.1.tar --nodes vk-worker",
		"kind load image-archive --name vk " + cache + "/images/toolbox.tar --nodes vk-worker",
		"ip route replace 10.244.0.0/24 via 172.18.0.2",
		"ip route replace 10.244.1.0/24 via 172.18.0.3",
		"ip route del 10.244.0.0/24 via 172.18.0.2",
		"ip route del 10.244.1.0/24 via 172.18.0.3",
	}
	if got := r.commands(); !reflect.DeepEqual(got, want) {
		t.Errorf("commands:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestKindExists(t *testing.T) {
	p, r := newTestKind(t, nil)
	r.on("kind get clusters", "other\nvk\n", nil)
	if ok, err := p.exists(context.Background()); !ok || err != nil {
		t.Errorf("exists = %t, %v; want true", ok, err)
	}
	r.on("kind get clusters", "vk-old\n", nil)
	if ok, err := p.exists(context.Background()); ok || err != nil {
		t.Errorf("exists = %t, %v; want false", ok, err)
	}
}

func TestKindLoadImageByTag(t *testing.T) {
	p, r := newTestKind(t, nil)
	ctx := context.Background()
	if err := p.LoadImage(ctx, "docker.io/valkey/valkey:8.0"); err != nil {
		t.Fatal(err)
	}
	if err := p.LoadImage(ctx, "example.org/other:1"); err != nil {
		t.Fatal(err)
	}
	got := r.commands()
	if len(got) != 2 || !strings.HasSuffix(got[0], "/images/valkey-8.0.1.tar") || got[1] != "kind load docker-image --name vk example.org/other:1" {
		t.Errorf("commands: %q", got)
	}
}

func TestKindLinkCommands(t *testing.T) {
	p, r := newTestKind(t, nil)
	p.hostVeth = func(_ context.Context, node string) (string, error) { return "veth-" + node, nil }
	ctx := context.Background()
	if err := p.CutLink(ctx, "vk-worker2"); err != nil {
		t.Fatal(err)
	}
	if err := p.RestoreLink(ctx, "vk-worker2"); err != nil {
		t.Fatal(err)
	}
	want := []string{"ip link set veth-vk-worker2 down", "ip link set veth-vk-worker2 up"}
	if got := r.commands(); !reflect.DeepEqual(got, want) {
		t.Errorf("commands %q, want %q", got, want)
	}
}

func TestKindConfig(t *testing.T) {
	for _, own := range []bool{true, false} {
		got := kindConfig(3, own, "/cache/kind/volumes/vk")
		for what, n := range map[string]int{
			"role: worker": 3, "role: control-plane": 1, "containerPath: /cache/kind/volumes/vk": 3,
			"disableDefaultCNI: true": 1, "kubeProxyMode: nftables": 1, "failCgroupV1: false": 1,
		} {
			if strings.Count(got, what) != n {
				t.Errorf("own image %t: %q %d times, want %d, in:\n%s", own, what, strings.Count(got, what), n, got)
			}
		}
		if want := "imageTag: v1.15.0"; strings.Contains(got, want) != own {
			t.Errorf("own image %t: CoreDNS tag %q present %t, in:\n%s", own, want, !own, got)
		}
	}
}

func TestKindImage(t *testing.T) {
	for in, want := range map[string]string{"": "docker.io/valkey-operator/kind-node:v1.37.2", "stock": "", " kindest/node:v1.37.0 ": "kindest/node:v1.37.0"} {
		if got := kindImage(in); got != want {
			t.Errorf("kindImage(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKindPodNetworkCommands(t *testing.T) {
	nodes := []corev1.Node{
		kindNode("vk-worker", "172.18.0.3", "10.244.1.0/24"),
		kindNode("vk-control-plane", "172.18.0.2", "10.244.0.0/24"),
	}
	p, r := newTestKind(t, nodes)
	if err := p.podNetwork(context.Background(), nodes); err != nil {
		t.Fatal(err)
	}
	conf := "docker exec -i %s sh -c mkdir -p /etc/cni/net.d && cat >/etc/cni/net.d/10-valkey-e2e.conflist"
	want := []string{
		"docker exec vk-control-plane sysctl -qw net.ipv4.ip_forward=1",
		fmt.Sprintf(conf, "vk-control-plane"),
		"docker exec vk-control-plane ip route replace 10.244.1.0/24 via 172.18.0.3",
		"docker exec vk-worker sysctl -qw net.ipv4.ip_forward=1",
		fmt.Sprintf(conf, "vk-worker"),
		"docker exec vk-worker ip route replace 10.244.0.0/24 via 172.18.0.2",
	}
	if got := r.commands(); !reflect.DeepEqual(got, want) {
		t.Errorf("commands:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var cfg struct {
		Plugins []struct {
			Type string `json:"type"`
			IPAM struct {
				Ranges [][]struct {
					Subnet string `json:"subnet"`
				} `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(cniConfig("10.244.1.0/24")), &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Plugins) != 2 || cfg.Plugins[0].Type != "ptp" || cfg.Plugins[0].IPAM.Ranges[0][0].Subnet != "10.244.1.0/24" {
		t.Errorf("CNI configuration %+v", cfg)
	}
}

func TestWithoutForward(t *testing.T) {
	kubeadm := `.:53 {
    errors
    health {
       lameduck 5s
    }
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30
    loop
    reload
}
`
	want := strings.Replace(kubeadm, "    forward . /etc/resolv.conf {\n       max_concurrent 1000\n    }\n", "", 1)
	tests := map[string]struct{ in, want string }{
		"kubeadm's block":  {kubeadm, want},
		"one line":         {".:53 {\n    forward . 8.8.8.8\n    cache 30\n}\n", ".:53 {\n    cache 30\n}\n"},
		"none":             {want, want},
		"forwarder plugin": {".:53 {\n    forwarded_by x\n}\n", ".:53 {\n    forwarded_by x\n}\n"},
	}
	for name, tt := range tests {
		if got := WithoutForward(tt.in); got != tt.want {
			t.Errorf("%s:\n%s\nwant:\n%s", name, got, tt.want)
		}
	}
}
