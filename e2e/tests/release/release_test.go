//go:build e2e

package release

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// quickstart returns the shell commands of the README's quick start.
func quickstart(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- quickstart: [^\n]*-->\n```sh\n(.*?)```\n<!-- quickstart: end -->").FindSubmatch(b)
	if m == nil {
		t.Fatal("README.md has no quick start block between the quickstart markers")
	}
	return string(m[1])
}

// namespacedKubeconfig writes a copy of the admin kubeconfig whose context uses ns, so the
// quick start's commands (which name no namespace) run in the feature's namespace.
func namespacedKubeconfig(ctx context.Context, t *testing.T, k *framework.Cluster, ns string) string {
	t.Helper()
	b, err := os.ReadFile(k.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, k.Paths.Kubectl, "--kubeconfig", file, "config", "set-context", "--current", "--namespace", ns)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("set the namespace: %v: %s", err, out)
	}
	return file
}

func TestQuickStartFromARegistry(t *testing.T) {
	var (
		reg      *framework.Registry
		repo     string
		version  string
		output   string
		pushedAt string
	)
	f := framework.NewFeature(suite, "the README's quick start, from a registry").
		Setup(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			reg = k.StartRegistry(ctx, t)
			v, err := os.ReadFile(filepath.Join(k.Paths.RepoRoot, "VERSION"))
			if err != nil {
				t.Fatal(err)
			}
			version = strings.TrimSpace(string(v))
			repo = reg.Address + "/valkey"
			return ctx
		}).
		Assess("the quick start's commands run as written", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			script := quickstart(t, k.Paths.RepoRoot)
			env := append(os.Environ(),
				"REGISTRY="+repo,
				"KUBECONFIG="+namespacedKubeconfig(ctx, t, k, framework.Namespace(ctx)),
				"PATH="+filepath.Join(k.Paths.RepoRoot, "hack", "tools", "bin")+":"+filepath.Dir(k.Paths.Kubectl)+":"+os.Getenv("PATH"),
			)
			env = append(env, reg.Env()...)
			cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
			cmd.Dir = k.Paths.RepoRoot
			cmd.Env = env
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			err := cmd.Run()
			output = out.String()
			t.Logf("quick start (%s):\n%s", time.Since(start).Round(time.Second), output)
			if err != nil {
				t.Fatalf("the quick start failed: %v", err)
			}
			pushedAt = pushedDigest(t, output)
			return ctx
		}).
		Assess("the client connected as app and got PONG", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			if !regexp.MustCompile(`(?m)^PONG$`).MatchString(output) {
				t.Errorf("no PONG in the quick start's output")
			}
			return ctx
		}).
		Assess("the registry holds the image for linux/amd64 and linux/arm64, labelled, as nonroot", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			idx := pullIndex(t, reg, repo+"/valkey-operator:"+version)
			d, err := idx.Digest()
			if err != nil {
				t.Fatal(err)
			}
			if d.String() != pushedAt {
				t.Errorf("registry has %s, make image-push said %s", d, pushedAt)
			}
			m, err := idx.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			var platforms []string
			for _, desc := range m.Manifests {
				if desc.Platform == nil {
					t.Fatalf("manifest %s has no platform", desc.Digest)
				}
				p := desc.Platform.OS + "/" + desc.Platform.Architecture
				platforms = append(platforms, p)
				img, err := idx.Image(desc.Digest)
				if err != nil {
					t.Fatal(err)
				}
				cf, err := img.ConfigFile()
				if err != nil {
					t.Fatal(err)
				}
				if cf.Config.User != "65532:65532" || cf.OS+"/"+cf.Architecture != p {
					t.Errorf("%s: user %q, platform %s/%s", p, cf.Config.User, cf.OS, cf.Architecture)
				}
				for _, l := range []string{"org.opencontainers.image.source", "org.opencontainers.image.version", "org.opencontainers.image.revision"} {
					if cf.Config.Labels[l] == "" {
						t.Errorf("%s: no label %s", p, l)
					}
				}
				if cf.Config.Labels["org.opencontainers.image.version"] != version {
					t.Errorf("%s: version label %q, want %s", p, cf.Config.Labels["org.opencontainers.image.version"], version)
				}
			}
			slices.Sort(platforms)
			if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
				t.Errorf("platforms %v", platforms)
			}
			return ctx
		}).
		Assess("the operator runs the registry's image, pulled by the nodes", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			var pods corev1.PodList
			if err := k.Client.List(ctx, &pods, client.InNamespace(framework.OperatorNamespace)); err != nil {
				t.Fatal(err)
			}
			if len(pods.Items) == 0 {
				t.Fatal("no operator pods")
			}
			want := repo + "/valkey-operator:" + version
			for _, p := range pods.Items {
				for _, cs := range p.Status.ContainerStatuses {
					if cs.Image != want || !strings.HasSuffix(cs.ImageID, "@"+pushedAt) {
						t.Errorf("pod %s container %s runs %s (%s), want %s@%s", p.Name, cs.Name, cs.Image, cs.ImageID, want, pushedAt)
					}
				}
			}
			return ctx
		}).
		Assess("the chart in the registry defaults to the pushed image", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			cmd := exec.CommandContext(ctx, filepath.Join(k.Paths.RepoRoot, "hack", "tools", "bin", "helm"),
				"show", "values", "oci://"+repo+"/charts/valkey-operator", "--version", version)
			cmd.Env = append(os.Environ(), reg.Env()...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("helm show values: %v: %s", err, out)
			}
			for _, want := range []string{fmt.Sprintf("registry: %q", reg.Address), `repository: "valkey/valkey-operator"`, `tag: ""`} {
				if !strings.Contains(string(out), want) {
					t.Errorf("the pushed chart's values lack %s", want)
				}
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			vc := &v1alpha1.ValkeyCluster{}
			vc.Namespace, vc.Name = framework.Namespace(ctx), "quickstart"
			// Foreground: the cluster goes once its members went, which needs the operator
			// (their finalizers), so it is uninstalled only after.
			if err := k.Client.Delete(ctx, vc, client.PropagationPolicy(metav1.DeletePropagationForeground)); client.IgnoreNotFound(err) != nil {
				t.Errorf("delete the quick start's cluster: %v", err)
			}
			if err := framework.WaitForDeletion(ctx, k.Client, vc, 2*time.Minute); err != nil {
				t.Errorf("the quick start's cluster: %v", err)
			}
			if out, err := k.Helm(ctx, "uninstall", framework.OperatorRelease, "--namespace", framework.OperatorNamespace, "--wait"); err != nil {
				t.Errorf("helm uninstall: %v: %s", err, out)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// pushedDigest reads the digest make image-push printed ("pushed <ref>@sha256:...").
func pushedDigest(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^pushed \S+@(sha256:[0-9a-f]{64})$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatal("make image-push printed no pushed digest")
	}
	return m[1]
}

// pullIndex reads an image index from the registry, trusting its CA.
func pullIndex(t *testing.T, reg *framework.Registry, ref string) v1.ImageIndex {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(reg.CABundle)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(b)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	idx, err := remote.Index(r, remote.WithTransport(tr))
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	return idx
}
