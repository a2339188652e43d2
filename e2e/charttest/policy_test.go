package charttest

import (
	"strings"
	"testing"
)

// Every component gets the same policy flags (the webhooks and each controller's guard
// must agree on which specs are valid), with the documented defaults.
func TestPolicyReachesEveryComponent(t *testing.T) {
	cases := []struct {
		name string
		sets []string
		want []string
		not  []string
	}{
		{name: "defaults",
			want: []string{"--max-members-per-cluster=100", "--min-backup-interval=5m", "--policy-profile=default"},
			not: []string{"--object-store-allowed-endpoints", "--kubernetes-api-addresses", "--refuse-sidecars",
				"--external-access-types", "--external-access-annotations", "--external-access-hostname-suffixes",
				"--allowed-config-keys"}},
		{name: "multiTenant", sets: []string{
			"policy.profile=multiTenant", "policy.externalAccess.allowedTypes={LoadBalancer}",
			"policy.externalAccess.allowedAnnotations={service.beta.kubernetes.io/aws-load-balancer-internal,external-dns.alpha.kubernetes.io/}",
			"policy.externalAccess.allowedHostnameSuffixes={.team-a.example.com}",
		}, want: []string{
			"--policy-profile=multiTenant", "--external-access-types=LoadBalancer",
			"--external-access-annotations=service.beta.kubernetes.io/aws-load-balancer-internal,external-dns.alpha.kubernetes.io/",
			"--external-access-hostname-suffixes=.team-a.example.com",
		}},
		{name: "set", sets: []string{
			"policy.maxMembersPerCluster=300", "policy.minBackupInterval=1h",
			"policy.objectStore.allowedEndpoints={minio.storage.svc,.example.com,10.0.0.0/8}",
			"policy.objectStore.kubernetesAPIAddresses={192.0.2.10,192.0.2.11}",
			"policy.allowedConfigKeys={new-key-of-valkey-10,other-new-key}",
		}, want: []string{
			"--allowed-config-keys=new-key-of-valkey-10,other-new-key",
			"--max-members-per-cluster=300", "--min-backup-interval=1h",
			"--object-store-allowed-endpoints=minio.storage.svc,.example.com,10.0.0.0/8",
			"--kubernetes-api-addresses=192.0.2.10,192.0.2.11",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, tc.sets...)
			for _, name := range components {
				args := deploymentArgs(objs, name)
				for _, w := range tc.want {
					if !strings.Contains(args, w) {
						t.Errorf("%s: args lack %s: %s", name, w, args)
					}
				}
				for _, n := range tc.not {
					if strings.Contains(args, n) {
						t.Errorf("%s: args have %s: %s", name, n, args)
					}
				}
			}
		})
	}
}

// The schema refuses what would turn a cap off or could not be a flag's value.
func TestPolicySchema(t *testing.T) {
	for _, set := range []string{
		"policy.maxMembersPerCluster=0",
		"policy.minBackupInterval=often",
		"policy.objectStore.allowedEndpoints={https://minio.storage.svc}",
		"policy.objectStore.kubernetesAPIAddresses={kubernetes.default}",
		"policy.objectStore.allowAll=true",
		"policy.profile=strict",
		"policy.externalAccess.allowedTypes={ClusterIP}",
		"policy.externalAccess.allowedHostnameSuffixes={example.com}",
		"policy.externalAccess.allowedAnnotations={*}",
		"policy.allowedConfigKeys={bad key}",
	} {
		if _, err := helm(t, "template", "vko", "charts/valkey-operator", "--kube-version", kubeVersion, "--set", set); err == nil {
			t.Errorf("%s was accepted", set)
		}
	}
}

// The multiTenant profile keeps every cluster's NetworkPolicy: the chart refuses to turn
// the operator's default off under it, naming the value.
func TestMultiTenantKeepsNetworkPolicies(t *testing.T) {
	out, err := helm(t, "template", "vko", "charts/valkey-operator", "--kube-version", kubeVersion,
		"--set", "policy.profile=multiTenant", "--set", "valkeyNetworkPolicy.enabled=false")
	if err == nil || !strings.Contains(out+err.Error(), "valkeyNetworkPolicy.enabled must be true") {
		t.Errorf("rendered, or failed without naming the value: %v\n%s", err, out)
	}
}
