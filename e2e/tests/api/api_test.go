//go:build e2e

package api

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

func examples(t *testing.T, k *framework.Cluster, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(k.Paths.RepoRoot, "docs", "examples", dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples in docs/examples/%s: %v", dir, err)
	}
	return files
}

// expectation reads the `# expect: <text>` first line of an invalid example.
func expectation(t *testing.T, file string) string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if sc.Scan() {
		if want, ok := strings.CutPrefix(sc.Text(), "# expect: "); ok {
			return want
		}
	}
	t.Fatalf("%s has no '# expect:' first line", file)
	return ""
}

func TestExamples(t *testing.T) {
	f := framework.NewFeature(suite, "examples through the webhook").
		Assess("every example is accepted", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			for _, file := range examples(t, k, "") {
				if out, err := k.Kubectl(ctx, "-n", framework.Namespace(ctx), "apply", "--dry-run=server", "-f", file); err != nil {
					t.Errorf("%s refused: %v\n%s", filepath.Base(file), err, out)
				}
			}
			return ctx
		}).
		Assess("every invalid example is refused naming its field", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			files := examples(t, k, "invalid")
			if len(files) < 25 {
				t.Errorf("%d invalid examples, want at least 25", len(files))
			}
			for _, file := range files {
				want := expectation(t, file)
				out, err := k.Kubectl(ctx, "-n", framework.Namespace(ctx), "apply", "--dry-run=server", "-f", file)
				if err == nil {
					t.Errorf("%s was accepted", filepath.Base(file))
					continue
				}
				if !strings.Contains(out+err.Error(), want) {
					t.Errorf("%s: refused without %q:\n%s", filepath.Base(file), want, out)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func TestExplain(t *testing.T) {
	f := framework.NewFeature(suite, "kubectl explain", framework.WithoutNamespace()).
		Assess("documents every field of the spec", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			out, err := k.Kubectl(ctx, "explain", "valkeycluster.spec", "--recursive")
			if err != nil {
				t.Fatal(err)
			}
			for _, field := range []string{"shards", "replicasPerShard", "image", "imagePullSecrets", "resources", "config",
				"containers", "exporter", "persistence", "reclaimPolicy", "storageClassName", "podDisruptionBudget", "mode",
				"terminationGracePeriodSeconds", "scheduling", "tolerations", "nodeSelector", "affinity", "priorityClassName",
				"topologySpreadConstraints", "tls", "certificate", "secretName", "users", "passwordSecret", "nopass",
				"commands", "keys", "readWrite", "readOnly", "writeOnly", "channels", "patterns", "permissions", "workloadType"} {
				if !strings.Contains(out, field+"\t") && !strings.Contains(out, field+" ") {
					t.Errorf("explain does not list %s", field)
				}
			}
			for _, field := range []string{"shards", "workloadType", "users"} {
				doc, err := k.Kubectl(ctx, "explain", "valkeycluster.spec."+field)
				if err != nil || !strings.Contains(doc, "DESCRIPTION") || len(doc) < 200 {
					t.Errorf("explain valkeycluster.spec.%s has no description: %v\n%s", field, err, doc)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func TestValkeyNodeWritesAreTheOperators(t *testing.T) {
	f := framework.NewFeature(suite, "ValkeyNode writes").
		Assess("a user cannot create a ValkeyNode", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			manifest := `apiVersion: valkey.io/v1alpha1
kind: ValkeyNode
metadata: {name: by-hand}
spec: {clusterName: x, shardIndex: 0, revision: 1, workloadType: StatefulSet, image: valkey/valkey:8.0.1, aclSecretName: x-acl, systemUsersSecretName: x-system-users}
`
			file := filepath.Join(t.TempDir(), "node.yaml")
			if err := os.WriteFile(file, []byte(manifest), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := k.Kubectl(ctx, "-n", framework.Namespace(ctx), "create", "-f", file)
			if err == nil {
				t.Fatalf("a ValkeyNode created by hand was admitted:\n%s", out)
			}
			if !strings.Contains(out+err.Error(), "operator") {
				t.Errorf("the refusal does not say who may write: %s", out)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
