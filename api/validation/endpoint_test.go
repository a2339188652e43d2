package validation

import (
	"errors"
	"net/netip"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

const refusedByPolicy = "refused by the operator's object-store endpoint policy"

// withEndpoint sets the store's endpoint of a backup.
func withEndpoint(e string) func(b *v1alpha1.ValkeyBackup) {
	return func(b *v1alpha1.ValkeyBackup) { b.Spec.ObjectStore.S3.Endpoint = e }
}

// The refused addresses and names hold whatever the administrator allows, and each
// refusal names the endpoint field, the range or name, and the policy.
func TestEndpointPolicyRefuses(t *testing.T) {
	withPolicy(t, Policy{ObjectStore: EndpointPolicy{APIServer: []netip.Prefix{netip.MustParsePrefix("10.96.0.1/32")}}})
	field := `spec.objectStore.s3.endpoint: Invalid value: `
	cases := []struct {
		endpoint string
		want     string
	}{
		{"http://169.254.169.254/", field + `"http://169.254.169.254/": link-local address (169.254.0.0/16) ` + refusedByPolicy},
		{"http://169.254.169.254/latest", "link-local address (169.254.0.0/16)"},
		{"http://[fd00:ec2::254]/", "cloud metadata address (fd00:ec2::254)"},
		{"http://100.100.100.200/", "cloud metadata address (100.100.100.200)"},
		{"http://127.0.0.1:9000", "loopback address (127.0.0.0/8)"},
		{"http://127.8.9.10:9000", "loopback address (127.0.0.0/8)"},
		{"http://[::1]:9000", "loopback address (::1)"},
		{"http://[::ffff:127.0.0.1]:9000", "loopback address (127.0.0.0/8)"},
		{"http://[fe80::1%25eth0]:9000", "link-local address (fe80::/10)"},
		{"http://0.0.0.0:9000", "unspecified address (0.0.0.0/8)"},
		{"http://[::]:9000", "unspecified address (::)"},
		{"http://[64:ff9b::a9fe:a9fe]/", "NAT64 address 64:ff9b::a9fe:a9fe of a link-local address (169.254.0.0/16)"},
		{"https://10.96.0.1:443", "the Kubernetes API server's address (10.96.0.1)"},
		{"http://localhost:9000", "loopback host name (localhost)"},
		{"http://LOCALHOST.:9000", "loopback host name (localhost)"},
		{"http://minio.localhost:9000", "loopback host name (minio.localhost)"},
		{"http://metadata/computeMetadata/v1/", "cloud metadata host name (metadata)"},
		{"http://metadata.google.internal/", "cloud metadata host name (metadata.google.internal)"},
		{"https://kubernetes.default.svc", "the Kubernetes API server's Service name (kubernetes.default.svc)"},
		{"https://kubernetes.default.svc.cluster.local", "the Kubernetes API server's Service name"},
		{"http://2130706433:9000", "is neither a DNS name nor an IP address in its usual form"},
		{"http://127.1:9000", "is neither a DNS name nor an IP address in its usual form"},
		{"http://0x7f.0x1:9000", "is neither a DNS name nor an IP address in its usual form"},
		{"http://under_score.example.com", "is neither an IP address nor a DNS name"},
		{"http://user:secret@minio.storage:9000", "must not hold credentials"},
		{"ftp://minio.storage", "must be an http:// or https:// URL"},
		{"http://:9000", "must name a host"},
	}
	for _, tc := range cases {
		t.Run(tc.endpoint, func(t *testing.T) {
			b := validBackup()
			withEndpoint(tc.endpoint)(b)
			checkErrs(t, ValidateBackup(b), []string{"spec.objectStore.s3.endpoint: Invalid value", tc.want})
		})
	}
}

// Without an allow-list every other endpoint is admitted; with one, only what it lists.
func TestEndpointAllowList(t *testing.T) {
	list, err := ParseEndpointAllowList(" minio.storage.svc, .example.com ,10.0.0.0/8,192.0.2.7 ")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		allow    bool
		list     string
		endpoint string
		region   string
		want     string
	}{
		{name: "no list: a service name", endpoint: "http://minio.storage.svc:9000"},
		{name: "no list: a private address", endpoint: "http://10.1.2.3:9000"},
		{name: "no list: a public name", endpoint: "https://s3.eu-west-1.amazonaws.com"},
		{name: "no list: AWS of the region", endpoint: ""},
		{name: "listed name", allow: true, endpoint: "http://minio.storage.svc:9000"},
		{name: "listed name, fully qualified", allow: true, endpoint: "http://MinIO.Storage.Svc.:9000"},
		{name: "under a listed name", allow: true, endpoint: "http://eu.minio.storage.svc:9000"},
		{name: "under a listed dot-suffix", allow: true, endpoint: "https://s3.example.com"},
		{name: "a dot-suffix itself is not under it", allow: true, endpoint: "https://example.com",
			want: `host example.com, outside the allow-list (policy.objectStore.allowedEndpoints: minio.storage.svc, .example.com, 10.0.0.0/8, 192.0.2.7), ` + refusedByPolicy},
		{name: "a suffix is matched by labels", allow: true, endpoint: "http://evilminio.storage.svc:9000",
			want: "host evilminio.storage.svc, outside the allow-list"},
		{name: "an address in a listed network", allow: true, endpoint: "http://10.1.2.3:9000"},
		{name: "a listed address", allow: true, endpoint: "http://192.0.2.7:9000"},
		{name: "an address outside", allow: true, endpoint: "http://192.0.2.8:9000",
			want: "address 192.0.2.8, outside the allow-list"},
		{name: "a refused address inside a listed network stays refused", allow: true, endpoint: "http://127.0.0.1:9000",
			want: "loopback address (127.0.0.0/8) " + refusedByPolicy},
		{name: "an allow-list entry within a refused range admits it", list: "127.0.0.1/32", endpoint: "http://127.0.0.1:9000"},
		{name: "only the addresses it names", list: "127.0.0.1/32", endpoint: "http://127.0.0.2:9000",
			want: "loopback address (127.0.0.0/8) " + refusedByPolicy},
		{name: "a wider entry admits no refused address", list: "0.0.0.0/0,::/0", endpoint: "http://169.254.169.254/",
			want: "link-local address (169.254.0.0/16) " + refusedByPolicy},
		{name: "a wider entry admits the others", list: "0.0.0.0/0", endpoint: "http://192.0.2.8:9000"},
		{name: "AWS of the region, not listed", allow: true, endpoint: "", region: "eu-west-1",
			want: `spec.objectStore.s3.endpoint: Invalid value: "": empty means AWS S3 (s3.eu-west-1.amazonaws.com): host s3.eu-west-1.amazonaws.com, outside the allow-list`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Policy{}
			if tc.allow {
				p.ObjectStore.Allowed = list
			}
			if tc.list != "" {
				l, err := ParseEndpointAllowList(tc.list)
				if err != nil {
					t.Fatal(err)
				}
				p.ObjectStore.Allowed = l
			}
			withPolicy(t, p)
			b := validBackup()
			withEndpoint(tc.endpoint)(b)
			b.Spec.ObjectStore.S3.Region = tc.region
			var want []string
			if tc.want != "" {
				want = []string{tc.want}
			}
			checkErrs(t, ValidateBackup(b), want)
		})
	}
}

// Every ObjectStoreSpec is checked: the ValkeyBackupSchedule's and the data source's too.
func TestEndpointPolicyOnEveryStore(t *testing.T) {
	s := validSchedule()
	s.Spec.ObjectStore.S3.Endpoint = "http://169.254.169.254/"
	checkErrs(t, ValidateBackupSchedule(s), []string{"spec.objectStore.s3.endpoint: Invalid value: \"http://169.254.169.254/\": link-local address"})

	store := validStore()
	store.Prefix = ""
	store.S3.Endpoint = "http://169.254.169.254/"
	runClusterCases(t, []clusterCase{{name: "data source", mutate: dataSource(&v1alpha1.DataSource{ObjectStore: &store, Path: "x/y"}),
		want: []string{"spec.dataSource.objectStore.s3.endpoint: Invalid value: \"http://169.254.169.254/\": link-local address (169.254.0.0/16)"}}})
}

// CheckAddress is what a client that resolves names itself asks for each address it
// dials: a listed name that resolves to a refused address is refused.
func TestCheckAddress(t *testing.T) {
	list, err := ParseEndpointAllowList("minio.storage.svc,10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	p := EndpointPolicy{Allowed: list, APIServer: []netip.Prefix{netip.MustParsePrefix("10.96.0.1/32")}}
	cases := []struct {
		host, addr string
		want       string
	}{
		{"minio.storage.svc", "172.16.0.5", ""},
		{"minio.storage.svc", "169.254.169.254", "link-local address (169.254.0.0/16)"},
		{"minio.storage.svc", "10.96.0.1", "the Kubernetes API server's address (10.96.0.1)"},
		{"other.storage.svc", "172.16.0.5", "address 172.16.0.5, outside the allow-list"},
		{"other.storage.svc", "10.2.3.4", ""},
		{"", "::ffff:169.254.169.254", "link-local address"},
	}
	for _, tc := range cases {
		t.Run(tc.host+"/"+tc.addr, func(t *testing.T) {
			err := p.CheckAddress(tc.host, netip.MustParseAddr(tc.addr))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var refusal *EndpointRefusedError
			if !errors.As(err, &refusal) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an EndpointRefusedError with %q", err, tc.want)
			}
		})
	}
	u, _ := url.Parse("http://minio.storage.svc:9000")
	if err := p.CheckEndpoint(u); err != nil {
		t.Fatalf("CheckEndpoint of a listed name: %v", err)
	}
}

func TestParseEndpointAllowList(t *testing.T) {
	for _, tc := range []struct {
		in      string
		hosts   int
		nets    int
		wantErr string
	}{
		{in: ""},
		{in: "a.example, .b.example", hosts: 2},
		{in: "10.0.0.0/8, 2001:db8::/32, 192.0.2.1", nets: 3},
		{in: "10.0.0.0/33", wantErr: "not a CIDR"},
		{in: "http://minio", wantErr: "is a URL: list host name suffixes and CIDRs"},
		{in: "minio:9000", wantErr: "neither a CIDR, an IP address nor a host name suffix"},
	} {
		l, err := ParseEndpointAllowList(tc.in)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: got %v, want %q", tc.in, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case len(l.Hosts) != tc.hosts || len(l.Networks) != tc.nets:
			t.Errorf("%q: got %d hosts and %d networks, want %d and %d", tc.in, len(l.Hosts), len(l.Networks), tc.hosts, tc.nets)
		}
	}
	if _, err := ParseNetworks("10.96.0.1, fd00::1,10.0.0.0/24"); err != nil {
		t.Errorf("ParseNetworks: %v", err)
	}
	if _, err := ParseNetworks("kubernetes"); err == nil {
		t.Error("ParseNetworks took a name")
	}
}

// A policy passed on as flags (the backup-controller to its Jobs) reads back the same.
func TestEndpointPolicyArgs(t *testing.T) {
	if args := (EndpointPolicy{}).Args(); len(args) != 0 {
		t.Fatalf("the default policy takes no flags, got %v", args)
	}
	allowed, err := ParseEndpointAllowList("minio.storage.svc,.example.com,10.0.0.0/8,127.0.0.1/32")
	if err != nil {
		t.Fatal(err)
	}
	p := EndpointPolicy{Allowed: allowed, APIServer: []netip.Prefix{netip.MustParsePrefix("10.96.0.1/32"), netip.MustParsePrefix("fd00::/120")}}
	args := p.Args()
	want := []string{"--object-store-allowed-endpoints=minio.storage.svc,.example.com,10.0.0.0/8,127.0.0.1",
		"--kubernetes-api-addresses=10.96.0.1,fd00::/120"}
	if strings.Join(args, " ") != strings.Join(want, " ") {
		t.Fatalf("args %q, want %q", args, want)
	}
	back, err := ParseEndpointPolicy(strings.TrimPrefix(args[0], "--object-store-allowed-endpoints="),
		strings.TrimPrefix(args[1], "--kubernetes-api-addresses="))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, p) {
		t.Fatalf("read back %+v, want %+v", back, p)
	}
	if _, err := ParseEndpointPolicy("", "kubernetes"); err == nil || !strings.Contains(err.Error(), "--kubernetes-api-addresses: ") {
		t.Fatalf("a bad value is named by its flag: %v", err)
	}
}
