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
			want: []string{"--max-members-per-cluster=100", "--min-backup-interval=5m"},
			not:  []string{"--object-store-allowed-endpoints", "--kubernetes-api-addresses", "--refuse-sidecars"}},
		{name: "set", sets: []string{
			"policy.maxMembersPerCluster=300", "policy.minBackupInterval=1h",
			"policy.objectStore.allowedEndpoints={minio.storage.svc,.example.com,10.0.0.0/8}",
			"policy.objectStore.kubernetesAPIAddresses={192.0.2.10,192.0.2.11}",
		}, want: []string{
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
	} {
		if _, err := helm(t, "template", "vko", "charts/valkey-operator", "--kube-version", kubeVersion, "--set", set); err == nil {
			t.Errorf("%s was accepted", set)
		}
	}
}
