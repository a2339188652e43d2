package operator

import (
	"flag"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/api/validation"
)

// The flags set the policy every validation applies, with the documented defaults, and
// refuse values that would turn a limit off.
func TestPolicyFlags(t *testing.T) {
	defer validation.SetPolicy(validation.Policy{})
	cases := []struct {
		name    string
		args    []string
		env     string
		check   func(t *testing.T, p validation.Policy)
		wantErr string
	}{
		{name: "defaults", check: func(t *testing.T, p validation.Policy) {
			if p.MembersPerCluster() != 100 || p.BackupInterval() != 5*time.Minute || p.RefuseSidecars {
				t.Errorf("got %d members, %s, refuse sidecars %v; want 100, 5m, false", p.MembersPerCluster(), p.BackupInterval(), p.RefuseSidecars)
			}
			if len(p.ObjectStore.Allowed.Hosts)+len(p.ObjectStore.Allowed.Networks)+len(p.ObjectStore.APIServer) != 0 {
				t.Errorf("want no allow-list and no API server address, got %+v", p.ObjectStore)
			}
		}},
		{name: "every flag", env: "10.96.0.1", args: []string{
			"--max-members-per-cluster=300", "--min-backup-interval=1m", "--refuse-sidecars",
			"--object-store-allowed-endpoints=minio.storage.svc,10.0.0.0/8", "--kubernetes-api-addresses=192.0.2.10,192.0.2.11",
		}, check: func(t *testing.T, p validation.Policy) {
			if p.MembersPerCluster() != 300 || p.BackupInterval() != time.Minute || !p.RefuseSidecars {
				t.Errorf("got %d members, %s, refuse sidecars %v", p.MembersPerCluster(), p.BackupInterval(), p.RefuseSidecars)
			}
			want := []netip.Prefix{netip.MustParsePrefix("192.0.2.10/32"), netip.MustParsePrefix("192.0.2.11/32"), netip.MustParsePrefix("10.96.0.1/32")}
			if !slices.Equal(p.ObjectStore.APIServer, want) {
				t.Errorf("API server addresses %v, want %v", p.ObjectStore.APIServer, want)
			}
			u, _ := url.Parse("https://10.96.0.1:443")
			if err := p.ObjectStore.CheckEndpoint(u); err == nil || !strings.Contains(err.Error(), "Kubernetes API server's address (10.96.0.1)") {
				t.Errorf("the Service address from KUBERNETES_SERVICE_HOST: %v", err)
			}
			u, _ = url.Parse("http://other.example:9000")
			if err := p.ObjectStore.CheckEndpoint(u); err == nil || !strings.Contains(err.Error(), "outside the allow-list") {
				t.Errorf("an endpoint outside the allow-list: %v", err)
			}
		}},
		{name: "the multiTenant profile and the external access lists", args: []string{
			"--policy-profile=multiTenant", "--external-access-types=LoadBalancer",
			"--external-access-annotations=external-dns.alpha.kubernetes.io/", "--external-access-hostname-suffixes=.team-a.example.com",
		}, check: func(t *testing.T, p validation.Policy) {
			if p.Profile != validation.ProfileMultiTenant || !p.SidecarsRefused() {
				t.Errorf("profile %q, sidecars refused %v; want multiTenant, true", p.Profile, p.SidecarsRefused())
			}
			e := p.ExternalAccess
			if len(e.Types) != 1 || e.Types[0] != "LoadBalancer" || len(e.Annotations) != 1 || len(e.HostnameSuffixes) != 1 {
				t.Errorf("external access policy %+v", e)
			}
		}},
		{name: "keys of a newer Valkey", args: []string{"--allowed-config-keys=New-Key-Of-Valkey-10, other-new-key"},
			check: func(t *testing.T, p validation.Policy) {
				if !slices.Equal(p.AllowedConfigKeys, []string{"new-key-of-valkey-10", "other-new-key"}) {
					t.Errorf("allowed config keys %v", p.AllowedConfigKeys)
				}
			}},
		{name: "a key the operator owns is no unknown key", args: []string{"--allowed-config-keys=port"},
			wantErr: `--allowed-config-keys: "port" is refused in every spec`},
		{name: "an unknown profile", args: []string{"--policy-profile=strict"}, wantErr: `--policy-profile: "strict"`},
		{name: "a host name in KUBERNETES_SERVICE_HOST is no address", env: "api.internal", check: func(t *testing.T, p validation.Policy) {
			if len(p.ObjectStore.APIServer) != 0 {
				t.Errorf("got %v", p.ObjectStore.APIServer)
			}
		}},
		{name: "no unlimited members", args: []string{"--max-members-per-cluster=0"},
			wantErr: "--max-members-per-cluster: 0: must be at least 1"},
		{name: "backups at most every minute", args: []string{"--min-backup-interval=30s"},
			wantErr: "--min-backup-interval: 30s: must be at least 1m"},
		{name: "a URL in the allow-list", args: []string{"--object-store-allowed-endpoints=https://minio"},
			wantErr: "--object-store-allowed-endpoints: \"https://minio\" is a URL"},
		{name: "a name in the API server's addresses", args: []string{"--kubernetes-api-addresses=kubernetes"},
			wantErr: "--kubernetes-api-addresses: \"kubernetes\" is not an IP address"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			validation.SetPolicy(validation.Policy{})
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			apply := policyFlags(fs, func(k string) string {
				if k == "KUBERNETES_SERVICE_HOST" {
					return tc.env
				}
				return ""
			})
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := apply()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, validation.CurrentPolicy())
		})
	}
}
