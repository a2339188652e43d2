package integration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/api/validation"
)

// metadataEndpoint is the cloud metadata service's address: a backup Job sending its
// requests (and the store's credentials) there is what the endpoint policy prevents.
const metadataEndpoint = "http://169.254.169.254/"

// storeAt is an object store of a valid bucket at endpoint.
func storeAt(endpoint, bucket string) v1alpha1.ObjectStoreSpec {
	return v1alpha1.ObjectStoreSpec{S3: &v1alpha1.S3Spec{Bucket: bucket, Endpoint: endpoint,
		Credentials: v1alpha1.S3Credentials{SecretName: "s3-creds"}}}
}

// The caps, through the real API server (its schema, then the webhook) with the
// operator's default policy, as a user's server-side dry run meets them: what would
// make one cluster or one object cost much is refused, naming the field and the limit.
var _ = DescribeTable("Objects over the operator's caps",
	func(obj client.Object, want []string) {
		err := admin.Create(context.Background(), obj, client.DryRunAll)
		Expect(err).To(HaveOccurred(), "admitted, want refused with %q", want)
		for _, w := range want {
			Expect(err.Error()).To(ContainSubstring(w))
		}
		GinkgoWriter.Println(err.Error())
	},
	Entry("1000 shards x (1 + 10 replicas)", &v1alpha1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "huge", Namespace: "default"},
		Spec:       v1alpha1.ValkeyClusterSpec{Shards: 1000, ReplicasPerShard: ptr.To[int32](10)},
	}, []string{"spec.shards: Invalid value: 1000: 1000 shards x (1 + 10 replicas) = 11000 members, " +
		"more than this operator allows per cluster (100; policy.maxMembersPerCluster)"}),
	Entry("a ValkeyBackup to the metadata service", &v1alpha1.ValkeyBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "imds", Namespace: "default"},
		Spec:       v1alpha1.ValkeyBackupSpec{ClusterName: "demo", ObjectStore: storeAt(metadataEndpoint, "backups")},
	}, []string{`spec.objectStore.s3.endpoint: Invalid value: "http://169.254.169.254/": ` +
		"link-local address (169.254.0.0/16) refused by the operator's object-store endpoint policy"}),
	Entry("a ValkeyBackupSchedule to the metadata service, every second", &v1alpha1.ValkeyBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "imds", Namespace: "default"},
		Spec: v1alpha1.ValkeyBackupScheduleSpec{ClusterName: "demo", Schedule: "@every 1s",
			ObjectStore: storeAt(metadataEndpoint, "backups")},
	}, []string{
		`spec.objectStore.s3.endpoint: Invalid value: "http://169.254.169.254/": link-local address (169.254.0.0/16)`,
		`spec.schedule: Invalid value: "@every 1s": two backups come 1s apart, more often than this operator allows ` +
			"(one every 5m at most; policy.minBackupInterval)",
	}),
	Entry("a ValkeyCluster restoring from the metadata service", &v1alpha1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "imds", Namespace: "default"},
		Spec: v1alpha1.ValkeyClusterSpec{DataSource: &v1alpha1.DataSource{
			ObjectStore: ptr.To(storeAt(metadataEndpoint, "backups")), Path: "prod/default/demo/b-1"}},
	}, []string{`spec.dataSource.objectStore.s3.endpoint: Invalid value: "http://169.254.169.254/": link-local address (169.254.0.0/16)`}),
	Entry("a bucket name that climbs out", &v1alpha1.ValkeyBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "climb", Namespace: "default"},
		Spec:       v1alpha1.ValkeyBackupSpec{ClusterName: "demo", ObjectStore: storeAt("", "../../x")},
	}, []string{`spec.objectStore.s3.bucket: Invalid value: "../../x": a bucket name has 3 to 63 lowercase letters`}),
	// Limits only the validation package states: the webhook refuses them.
	Entry("config keys and values over 64 KiB together", &v1alpha1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "config-bytes", Namespace: "default"},
		Spec:       v1alpha1.ValkeyClusterSpec{Config: bigConfig(17, 4096)},
	}, []string{"spec.config: Too long: ", "bytes of keys and values, more than the 65536 bytes allowed"}),
	// Limits the schema states: the API server refuses them itself, webhook or not.
	Entry("201 config entries (the CRD's maxProperties)", &v1alpha1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "config", Namespace: "default"},
		Spec:       v1alpha1.ValkeyClusterSpec{Config: manyConfig(201)},
	}, []string{"spec.config: Too many: 201: must have at most 200 items"}),
	Entry("101 users (the CRD's maxItems)", &v1alpha1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "users", Namespace: "default"},
		Spec:       v1alpha1.ValkeyClusterSpec{Users: manyUsers(101)},
	}, []string{"spec.users: Too many: 101: must have at most 100 items"}),
)

// At the caps, the same kinds of objects are admitted. No supported Valkey has 200
// keys a spec may set, so the config at its cap holds made-up keys that the
// administrator admits (policy.allowedConfigKeys).
var _ = DescribeTable("Objects at the operator's caps",
	func(obj client.Object) {
		if c, ok := obj.(*v1alpha1.ValkeyCluster); ok && len(c.Spec.Config) > 0 {
			validation.SetPolicy(validation.Policy{AllowedConfigKeys: slices.Collect(maps.Keys(c.Spec.Config))})
			DeferCleanup(func() { validation.SetPolicy(validation.Policy{}) })
		}
		Expect(admin.Create(context.Background(), obj, client.DryRunAll)).To(Succeed())
	},
	Entry("50 shards x (1 + 1 replica)", &v1alpha1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "at-cap", Namespace: "default"},
		Spec:       v1alpha1.ValkeyClusterSpec{Shards: 50, ReplicasPerShard: ptr.To[int32](1)},
	}),
	Entry("200 config entries and 100 users", &v1alpha1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "at-limits", Namespace: "default"},
		Spec:       v1alpha1.ValkeyClusterSpec{Config: manyConfig(200), Users: manyUsers(100)},
	}),
	Entry("a schedule every 5 minutes to a store in the cluster", &v1alpha1.ValkeyBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "often", Namespace: "default"},
		Spec: v1alpha1.ValkeyBackupScheduleSpec{ClusterName: "demo", Schedule: "*/5 * * * *",
			ObjectStore: storeAt("http://minio.storage.svc:9000", "valkey-backups")},
	}),
)

func manyConfig(n int) v1alpha1.Config {
	c := v1alpha1.Config{}
	for i := range n {
		c[fmt.Sprintf("notify-key-%d", i)] = "x"
	}
	return c
}

// bigConfig is n entries of values of the given length.
func bigConfig(n, length int) v1alpha1.Config {
	c := v1alpha1.Config{}
	for i := range n {
		c[fmt.Sprintf("notify-key-%d", i)] = strings.Repeat("K", length)
	}
	return c
}

func manyUsers(n int) []v1alpha1.UserSpec {
	out := make([]v1alpha1.UserSpec, n)
	for i := range out {
		out[i] = v1alpha1.UserSpec{Name: fmt.Sprintf("user%d", i), NoPass: true}
	}
	return out
}
