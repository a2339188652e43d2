package integration

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

var _ = Describe("The CRDs", func() {
	// `kubectl explain` stays useful: every field under spec of both CRDs has a
	// description.
	DescribeTable("describe every field",
		func(file string) {
			data, err := os.ReadFile(filepath.Join(repoRoot, "config", "crd", file))
			Expect(err).NotTo(HaveOccurred())
			crd := &apiextensionsv1.CustomResourceDefinition{}
			Expect(yaml.Unmarshal(data, crd)).To(Succeed())
			spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
			var missing []string
			undescribed(spec, "spec", &missing)
			Expect(missing).To(BeEmpty(), "fields without a description:\n%s", strings.Join(missing, "\n"))
		},
		Entry("of ValkeyCluster", "valkey.io_valkeyclusters.yaml"),
		Entry("of ValkeyNode", "valkey.io_valkeynodes.yaml"),
	)

	// The command users will run.
	It("are explained by kubectl explain", func() {
		r := runKubectl("explain", "valkeycluster.spec", "--recursive")
		Expect(r.err).NotTo(HaveOccurred(), "kubectl explain:\n%s", r.stderr)
		for _, field := range []string{"shards", "replicasPerShard", "persistence", "topologySpreadConstraints", "users", "workloadType"} {
			Expect(r.stdout).To(ContainSubstring(field), "kubectl explain shows %s", field)
		}
		r = runKubectl("explain", "valkeycluster.spec.users.passwordSecret")
		Expect(r.err).NotTo(HaveOccurred(), "kubectl explain of a nested field")
		Expect(r.stdout).To(And(ContainSubstring("DESCRIPTION"), ContainSubstring("rotation")), "kubectl explain of a nested field shows a description")
		r = runKubectl("explain", "valkeycluster.spec.tls", "--recursive")
		Expect(r.err).NotTo(HaveOccurred(), "kubectl explain valkeycluster.spec.tls")
		for _, field := range []string{"certificate", "certManager", "issuerRef", "renewBefore", "privateKey", "dnsNames", "ipAddresses"} {
			Expect(r.stdout).To(ContainSubstring(field), "kubectl explain valkeycluster.spec.tls shows %s", field)
		}
		r = runKubectl("explain", "valkeycluster.spec.tls.certManager")
		Expect(r.err).NotTo(HaveOccurred(), "kubectl explain valkeycluster.spec.tls.certManager")
		Expect(r.stdout).To(ContainSubstring("cert-manager"), "kubectl explain of certManager says what it does")
	})
})

// undescribed appends the paths of the properties of s that lack a description.
func undescribed(s apiextensionsv1.JSONSchemaProps, path string, missing *[]string) {
	if s.Description == "" {
		*missing = append(*missing, path)
	}
	for name, p := range s.Properties {
		undescribed(p, path+"."+name, missing)
	}
	if s.Items != nil && s.Items.Schema != nil {
		undescribedChildren(*s.Items.Schema, path+"[]", missing)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		undescribedChildren(*s.AdditionalProperties.Schema, path+"{}", missing)
	}
}

// undescribedChildren checks the properties of a list item or map value (the item
// itself carries its field's description).
func undescribedChildren(s apiextensionsv1.JSONSchemaProps, path string, missing *[]string) {
	for name, p := range s.Properties {
		undescribed(p, path+"."+name, missing)
	}
}
