package integration

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/api/validation"
)

// createCluster stores a cluster built by mutate and deletes it when the spec ends.
func createCluster(name string, mutate func(c *v1alpha1.ValkeyCluster)) *v1alpha1.ValkeyCluster {
	GinkgoHelper()
	c := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	if mutate != nil {
		mutate(c)
	}
	Expect(admin.Create(context.Background(), c)).To(Succeed(), "create %s", name)
	DeferCleanup(func() { _ = admin.Delete(context.Background(), c) })
	return c
}

func withPersistence(size string, class *string) func(c *v1alpha1.ValkeyCluster) {
	return func(c *v1alpha1.ValkeyCluster) {
		c.Spec.Persistence = &v1alpha1.PersistenceSpec{Size: resource.MustParse(size), StorageClassName: class}
	}
}

func withTLS(secret string) func(c *v1alpha1.ValkeyCluster) {
	return func(c *v1alpha1.ValkeyCluster) {
		c.Spec.TLS = &v1alpha1.TLSSpec{Certificate: &v1alpha1.CertificateSpec{SecretName: secret}}
	}
}

func withCertManager(issuer string) func(c *v1alpha1.ValkeyCluster) {
	return func(c *v1alpha1.ValkeyCluster) {
		cm := &v1alpha1.CertManagerSpec{}
		if issuer != "" {
			cm.IssuerRef = &v1alpha1.IssuerRef{Name: issuer, Kind: v1alpha1.IssuerKindClusterIssuer}
		}
		c.Spec.TLS = &v1alpha1.TLSSpec{CertManager: cm}
	}
}

var updates int

// Stored clusters changed through the API server: the rules that compare old and new
// hold.
var _ = DescribeTable("Updates of a stored cluster",
	func(initial, change func(c *v1alpha1.ValkeyCluster), want string) {
		updates++
		c := createCluster(fmt.Sprintf("update-%d", updates), initial)
		change(c)
		err := admin.Update(context.Background(), c)
		if want == "" {
			Expect(err).NotTo(HaveOccurred(), "refused")
			return
		}
		Expect(err).To(HaveOccurred(), "accepted, want refused with %q", want)
		Expect(err.Error()).To(ContainSubstring(want))
	},
	Entry("scale shards out", nil, func(c *v1alpha1.ValkeyCluster) { c.Spec.Shards = 6 }, ""),
	Entry("scale shards in", nil, func(c *v1alpha1.ValkeyCluster) { c.Spec.Shards = 1 }, ""),
	Entry("scale replicas", nil, func(c *v1alpha1.ValkeyCluster) { c.Spec.ReplicasPerShard = ptr.To[int32](0) }, ""),
	Entry("rename the TLS secret", withTLS("a"), withTLS("b"), ""),
	Entry("switch from a Secret to cert-manager", withTLS("a"), withCertManager(""), ""),
	Entry("switch from cert-manager to a Secret", withCertManager(""), withTLS("a"), ""),
	Entry("switch to an issuer of the user's", withCertManager(""), withCertManager("corp"), ""),
	Entry("keep both sources", withTLS("a"), func(c *v1alpha1.ValkeyCluster) { c.Spec.TLS.CertManager = &v1alpha1.CertManagerSpec{} },
		`spec.tls: Invalid value: set exactly one of certificate (a Secret you keep) and certManager`),
	Entry("grow the volumes", withPersistence("1Gi", nil), withPersistence("2Gi", nil), ""),
	Entry("label only", nil, func(c *v1alpha1.ValkeyCluster) { c.Labels = map[string]string{"team": "cache"} }, ""),
	Entry("change the workload type", nil, func(c *v1alpha1.ValkeyCluster) { c.Spec.WorkloadType = v1alpha1.WorkloadPod },
		`spec.workloadType: Forbidden: workloadType cannot change after creation`),
	Entry("add persistence", nil, withPersistence("1Gi", nil), "spec.persistence: Forbidden: persistence cannot be added after creation"),
	Entry("remove persistence", withPersistence("1Gi", nil), func(c *v1alpha1.ValkeyCluster) { c.Spec.Persistence = nil },
		"spec.persistence: Forbidden: persistence cannot be removed after creation"),
	Entry("shrink the volumes", withPersistence("2Gi", nil), withPersistence("1Gi", nil),
		`spec.persistence.size: Invalid value: "1Gi": can only grow (was 2Gi)`),
	Entry("change the storage class", withPersistence("1Gi", ptr.To("slow")), withPersistence("1Gi", ptr.To("fast")),
		`spec.persistence.storageClassName: Forbidden: storageClassName cannot change after creation`),
	Entry("turn TLS on", nil, withTLS("a"), "spec.tls: Forbidden: TLS cannot be turned on after creation"),
	Entry("turn TLS off", withTLS("a"), func(c *v1alpha1.ValkeyCluster) { c.Spec.TLS = nil }, "spec.tls: Forbidden: TLS cannot be turned off after creation"),
	Entry("turn cert-manager's TLS off", withCertManager(""), func(c *v1alpha1.ValkeyCluster) { c.Spec.TLS = nil },
		"spec.tls: Forbidden: TLS cannot be turned off after creation"),
)

// Finalizers and labels can always change, so a cluster can be deleted even when its
// spec no longer passes.
var _ = It("admits a metadata update of a stored cluster", func() {
	c := createCluster("metadata-only", func(c *v1alpha1.ValkeyCluster) {
		c.Finalizers = []string{"valkey.io/test"}
	})
	c.Finalizers = nil
	Expect(admin.Update(context.Background(), c)).To(Succeed(), "removing a finalizer")
	Expect(client.IgnoreNotFound(admin.Delete(context.Background(), c))).To(Succeed())
})

// A cluster stored with a config key the key table lacks (admitted by an older
// operator; here by a policy that admitted it, since withdrawn) can still be changed:
// the unchanged entry is a warning, and what the change adds or the image it moves to
// is checked as at creation.
var _ = It("admits a change of a cluster stored with a key the key table lacks, with a warning", func() {
	validation.SetPolicy(validation.Policy{AllowedConfigKeys: []string{"lua-replicate-commands"}})
	DeferCleanup(validation.SetPolicy, validation.Policy{})
	createCluster("old-key", func(c *v1alpha1.ValkeyCluster) {
		c.Spec.Config = v1alpha1.Config{"lua-replicate-commands": "yes"}
	})
	validation.SetPolicy(validation.Policy{})
	patch := func(spec string) kubectlRun {
		return runKubectl("patch", "valkeycluster", "old-key", "--namespace=default", "--type=merge", "--patch", `{"spec":`+spec+`}`)
	}

	By("scaling out: admitted, with the warning kubectl prints")
	r := patch(`{"shards":4}`)
	Expect(r.err).NotTo(HaveOccurred(), "refused:\n%s", r.stderr)
	Expect(r.stderr).To(ContainSubstring(`Warning: spec.config[lua-replicate-commands]: Invalid value: "lua-replicate-commands": ` +
		"is not a configuration key of any supported Valkey"))
	Expect(r.stderr).To(ContainSubstring("a server may refuse the entry at the next restart of a member: remove or correct it"))

	By("adding another unknown key: refused for that key only, the kept one still a warning")
	r = patch(`{"config":{"maxmemroy":"1gb"}}`)
	Expect(r.err).To(HaveOccurred(), "accepted:\n%s", r.stdout)
	warnings, refusal, _ := strings.Cut(r.stderr, `The ValkeyCluster "old-key" is invalid: `)
	Expect(refusal).To(HavePrefix("spec.config[maxmemroy]: Invalid value"))
	Expect(refusal).NotTo(ContainSubstring("lua-replicate-commands"))
	Expect(warnings).To(ContainSubstring("Warning: spec.config[lua-replicate-commands]"))
	Expect(warnings).NotTo(ContainSubstring("maxmemroy"))

	By("changing the image: the kept key is checked again")
	r = patch(`{"image":"valkey/valkey:8.1.1"}`)
	Expect(r.err).To(HaveOccurred(), "accepted:\n%s", r.stdout)
	Expect(r.stderr).To(ContainSubstring("spec.config[lua-replicate-commands]: Invalid value"))
	Expect(r.stderr).NotTo(ContainSubstring("Warning:"))
})
