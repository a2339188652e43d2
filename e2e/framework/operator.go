package framework

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/yaml"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func init() {
	// The suites' clients read and write the operator's resources.
	if err := v1alpha1.AddToScheme(clientgoscheme.Scheme); err != nil {
		panic(err)
	}
}

// OperatorNamespace and OperatorRelease are where the suites install the operator.
const (
	OperatorNamespace = "valkey-operator"
	OperatorRelease   = "valkey-operator"
)

// Helm runs the chart tool the Makefile installs (hack/tools/bin/helm) against the cluster.
func (k *Cluster) Helm(ctx context.Context, args ...string) (string, error) {
	bin := filepath.Join(k.Paths.RepoRoot, "hack", "tools", "bin", "helm")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("helm is not installed at %s: run `make tools`", bin)
	}
	cmd := exec.CommandContext(ctx, bin, append(args, "--kubeconfig", k.Kubeconfig)...)
	cmd.Dir = k.Paths.RepoRoot
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// InstallOperator returns a Setup step that installs (or upgrades) the operator with the
// project's chart, as a user would, with the given --set values, and waits until every
// component runs. The operator image is the one `make images` built and loaded.
func InstallOperator(sets ...string) env.Func {
	return func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		k := clusterFrom(ctx)
		if k == nil {
			return ctx, fmt.Errorf("install the operator: the cluster is not set up")
		}
		start := time.Now()
		args := []string{"upgrade", "--install", OperatorRelease, "charts/valkey-operator",
			"--namespace", OperatorNamespace, "--create-namespace", "--wait", "--timeout", "3m",
			// The suites and the benchmark scrape the components' metrics from the host
			// (OperatorMetric, perf.OperatorSampler) in plain HTTP, the chart's option for
			// local use; the security suite installs with metrics.secure=true and checks
			// the HTTPS endpoint and its authorization.
			"--set", "metrics.secure=false"}
		for _, s := range append(sets, OperatorSets()...) {
			args = append(args, "--set", s)
		}
		if _, err := k.Helm(ctx, args...); err != nil {
			return ctx, err
		}
		if err := k.RestartOperatorIfImageChanged(ctx); err != nil {
			return ctx, err
		}
		if err := k.waitWebhooksServing(ctx, time.Minute); err != nil {
			return ctx, err
		}
		fmt.Fprintf(os.Stderr, "e2e: operator installed in %s\n", time.Since(start).Round(10*time.Millisecond))
		return ctx, nil
	}
}

// OperatorSets are the chart values every install of the suites adds after its own:
// E2E_OPERATOR_SET, separated by spaces (for example controllers.combined=true to run
// a suite against the operator in one process).
func OperatorSets() []string { return strings.Fields(os.Getenv("E2E_OPERATOR_SET")) }

// waitWebhooksServing waits until the API server reaches the webhooks through their
// Service for every kind they validate. Ready pods are not enough: until kube-proxy on
// the API server's node has the Service's endpoints, the API server's call is refused
// or times out (seen on kind: a create failed with "failed calling webhook ...
// connection refused", and a ValkeyBackupSchedule's with "context deadline exceeded"
// right after a ValkeyCluster's had passed). A server-side dry run of a valid object of
// each kind tells: any answer but a failed webhook call means the webhook answered
// (without the webhooks, the chart's toggle off, the API server answers alone). The
// webhooks run as several pods behind one Service, so the probes must pass
// webhookProbeRounds times in a row.
func (k *Cluster) waitWebhooksServing(ctx context.Context, timeout time.Duration) error {
	probes, err := k.webhookProbes()
	if err != nil {
		return err
	}
	passed := 0
	return Until(ctx, timeout, "the webhooks to answer the API server after the install", func(ctx context.Context) (bool, string, error) {
		for _, obj := range probes {
			err := k.Client.Create(ctx, obj.DeepCopyObject().(client.Object), client.DryRunAll)
			if err != nil && strings.Contains(err.Error(), "failed calling webhook") {
				passed = 0
				return false, err.Error(), nil
			}
		}
		passed++
		return passed >= webhookProbeRounds, fmt.Sprintf("%d of %d rounds of probes answered", passed, webhookProbeRounds), nil
	})
}

// webhookProbeRounds is how many rounds of dry runs in a row must reach the webhooks.
const webhookProbeRounds = 5

// webhookProbes are valid objects of every kind the webhooks validate on create (the
// documentation's examples of backups, in the operator's namespace): ValkeyNodes are
// validated only for other users than the operator's, and their identity rule refuses
// a create anyway.
func (k *Cluster) webhookProbes() ([]client.Object, error) {
	out := []client.Object{NewValkeyCluster(OperatorNamespace, "e2e-webhooks-probe", 3, 1)}
	for _, name := range []string{"backup.yaml", "backup-schedule.yaml"} {
		b, err := os.ReadFile(filepath.Join(k.Paths.RepoRoot, "docs", "examples", name))
		if err != nil {
			return nil, fmt.Errorf("webhook probe: %w", err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &u.Object); err != nil {
			return nil, fmt.Errorf("webhook probe %s: %w", name, err)
		}
		u.SetNamespace(OperatorNamespace)
		u.SetName("e2e-webhooks-probe")
		out = append(out, u)
	}
	return out, nil
}

// RestartOperatorIfImageChanged restarts the operator's Deployments whose pods run an older
// build of the :dev image than the one now loaded (helm sees no change in the tag).
func (k *Cluster) RestartOperatorIfImageChanged(ctx context.Context) error {
	img, err := k.ComponentImage("operator")
	if err != nil {
		return err
	}
	var deps appsv1.DeploymentList
	if err := k.Client.List(ctx, &deps, client.InNamespace(OperatorNamespace)); err != nil {
		return err
	}
	for i := range deps.Items {
		d := &deps.Items[i]
		if d.Spec.Template.Annotations["valkey.io/e2e-image-id"] == img.ID {
			continue
		}
		patch := client.MergeFrom(d.DeepCopy())
		if d.Spec.Template.Annotations == nil {
			d.Spec.Template.Annotations = map[string]string{}
		}
		d.Spec.Template.Annotations["valkey.io/e2e-image-id"] = img.ID
		if err := k.Client.Patch(ctx, d, patch); err != nil {
			return fmt.Errorf("restart %s: %w", d.Name, err)
		}
	}
	for i := range deps.Items {
		d := &deps.Items[i]
		if err := WaitFor(ctx, k.Client, d, 2*time.Minute, "deployment "+d.Name+" rolled out", func(d *appsv1.Deployment) (bool, string) {
			done := d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == *d.Spec.Replicas &&
				d.Status.AvailableReplicas == *d.Spec.Replicas && d.Status.Replicas == *d.Spec.Replicas
			return done, fmt.Sprintf("updated %d available %d of %d", d.Status.UpdatedReplicas, d.Status.AvailableReplicas, *d.Spec.Replicas)
		}); err != nil {
			return err
		}
	}
	return nil
}

// OperatorDeployment returns the name of a component's Deployment.
func OperatorDeployment(component string) string { return OperatorRelease + "-" + component }
