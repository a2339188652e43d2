package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// TestCRDDescribesEveryField keeps `kubectl explain` useful: every field under spec
// of both CRDs has a description.
func TestCRDDescribesEveryField(t *testing.T) {
	for _, file := range []string{"valkey.io_valkeyclusters.yaml", "valkey.io_valkeynodes.yaml"} {
		t.Run(file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(repoRoot, "config", "crd", file))
			if err != nil {
				t.Fatal(err)
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.Unmarshal(data, crd); err != nil {
				t.Fatal(err)
			}
			spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
			var missing []string
			undescribed(spec, "spec", &missing)
			if len(missing) > 0 {
				t.Errorf("fields without a description:\n%s", strings.Join(missing, "\n"))
			}
		})
	}
}

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

// TestKubectlExplain runs the command users will run.
func TestKubectlExplain(t *testing.T) {
	out, errOut, err := runKubectl(t, "explain", "valkeycluster.spec", "--recursive")
	if err != nil {
		t.Fatalf("kubectl explain: %v\n%s", err, errOut)
	}
	for _, field := range []string{"shards", "replicasPerShard", "persistence", "topologySpreadConstraints", "users", "workloadType"} {
		if !strings.Contains(out, field) {
			t.Errorf("kubectl explain does not show %s", field)
		}
	}
	out, _, err = runKubectl(t, "explain", "valkeycluster.spec.users.passwordSecret")
	if err != nil || !strings.Contains(out, "DESCRIPTION") || !strings.Contains(out, "rotation") {
		t.Errorf("kubectl explain of a nested field shows no description: %v\n%s", err, out)
	}
}
