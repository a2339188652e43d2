//go:build bench

package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/e2e/peer"
	"github.com/valkey-operator/valkey-operator/e2e/perf"
	"github.com/valkey-operator/valkey-operator/localkube/images"
)

// peerOn is BENCH_PEER=1: the comparison with the official valkey-io operator runs.
var peerOn bool

// benchPeer is the comparison (BENCH_PEER=1): the compared items on ours, then ours
// removed and the official valkey-io operator installed in its place (both own the
// ValkeyCluster and ValkeyNode kinds of valkey.io), the same items on it, then it removed
// and ours installed again, with a check that the Kubernetes was left as found. Every
// cluster runs the same Valkey 9.1 image (the peer's servers need 9.0) and exporter
// image. What one side could not measure is recorded as such, and the other side goes on.
func benchPeer(ctx context.Context, t *testing.T, k *framework.Cluster, ns string) {
	if !peerOn {
		t.Skip("BENCH_PEER=1 runs the comparison with the valkey-io operator")
	}
	m, err := peer.Render(k.Paths.RepoRoot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := k.ComponentImage(images.ComponentPeer)
	if err != nil || img.Ref != m.Image {
		t.Fatalf("no image %s of the valkey-io operator at %s (found %q, %v): run make bench-peer-image", m.Image, m.Commit[:12], img.Ref, err)
	}
	valkey91, err := k.ValkeyImage(9, 1)
	if err != nil {
		t.Fatal(err)
	}
	exporter, err := k.ComponentImage(images.ComponentExporter)
	if err != nil {
		t.Fatal(err)
	}
	cmp := &perf.Comparison{
		Ours: perf.Subject{Name: "valkey-operator (this repository)", Commit: results.Commit},
		Peer: perf.Subject{Name: peer.Name, Commit: m.Commit},
	}
	results.Comparison = cmp
	cmp.Note("Each operator as installed by default, measured on the same Kubernetes one after the other: ours with the chart (its "+
		"controllers apart and the webhooks; metrics.secure=false), the peer from its config/default (one manager; metrics in plain "+
		"HTTP). Every cluster runs %s with the exporter %s and a test user without password; \"converged\" is the operator's Ready "+
		"for the current generation and every server agreeing (perf.PodsConverged).", valkey91.Ref, exporter.Ref)
	quiet := quietClient(t, k)

	ours := &cmpRun{k: k, quiet: quiet, ns: ns, side: oursSide(), valkey: valkey91, fig: newFigures(), pauseSampler: true}
	ours.measure(ctx, t)

	restore := swapInPeer(ctx, t, k, m, cmp)
	theirs := &cmpRun{k: k, quiet: quiet, ns: ns, side: peerSide(m, exporter.Ref), valkey: valkey91, fig: newFigures()}
	theirs.measure(ctx, t)
	addCmpRows(cmp, ours.fig, theirs.fig)
	restore()
	t.Logf("comparison:\n%s", cmp.Markdown())
}

// swapInPeer removes ours and installs the peer, with the run-wide sampler paused until
// ours is back (its pods then count from their start). It returns the function that removes
// the peer, installs ours again and checks that the Kubernetes is as it was found; the
// function also runs at the step's end if the step stops before it.
func swapInPeer(ctx context.Context, t *testing.T, k *framework.Cluster, m peer.Manifest, cmp *perf.Comparison) func() {
	t.Helper()
	before, err := peer.Snapshot(ctx, k.Client)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("before the swap: %s", before)
	bench.sampler.Pause()
	done := false
	restore := func() {
		if done {
			return
		}
		done = true
		ctx := context.WithoutCancel(ctx)
		defer bench.sampler.Resume(ctx)
		restoreOurs(ctx, t, k, m, before, cmp)
	}
	t.Cleanup(restore)
	start := time.Now()
	if err := removeOurs(ctx, k); err != nil {
		t.Fatal(err)
	}
	removed := time.Since(start)
	installed, err := peer.Install(ctx, k.Client, m, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := bench.writes.CoverAccount(ctx, peer.Component, m.Namespace, m.ServiceAccount); err != nil {
		t.Fatal(err)
	}
	cmp.Note("Ours removed in %s (helm uninstall, then its CRDs); the peer installed in %s (%d objects, image %s).",
		removed.Round(100*time.Millisecond), installed.Round(100*time.Millisecond), len(m.Objects), m.Image)
	return restore
}

// restoreOurs removes the peer, installs ours again with the bench's chart values, and
// compares the Kubernetes with before.
func restoreOurs(ctx context.Context, t *testing.T, k *framework.Cluster, m peer.Manifest, before peer.State, cmp *perf.Comparison) {
	t.Helper()
	start := time.Now()
	if err := peer.Remove(ctx, k.Client, m, 3*time.Minute); err != nil {
		t.Error(err)
	}
	removed := time.Since(start)
	if _, err := framework.InstallOperator()(ctx, nil); err != nil {
		t.Errorf("install ours again: %v", err)
	}
	if err := waitOperatorSettled(ctx, k, 3*time.Minute); err != nil {
		t.Error(err)
	}
	after, err := peer.Snapshot(ctx, k.Client)
	if err != nil {
		t.Error(err)
		return
	}
	if diff := before.Diff(after); len(diff) > 0 {
		t.Errorf("the swap did not leave the Kubernetes as it found it: %s", strings.Join(diff, "; "))
		cmp.Note("The peer removed in %s and ours installed again, but the Kubernetes DIFFERS from before the swap: %s.",
			removed.Round(100*time.Millisecond), strings.Join(diff, "; "))
		return
	}
	cmp.Note("The peer removed in %s and ours installed again: the Kubernetes as found (%s).", removed.Round(100*time.Millisecond), after)
}

// removeOurs uninstalls ours and deletes its CRDs (the chart keeps them), whose kinds the
// peer's CRDs define again. It refuses while any object of those CRDs exists: deleting
// a CRD deletes its objects, and ours' hold finalizers that only ours removes.
func removeOurs(ctx context.Context, k *framework.Cluster) error {
	if err := refuseValkeyObjects(ctx, k.Client); err != nil {
		return err
	}
	crds, err := valkeyCRDs(ctx, k.Client)
	if err != nil {
		return err
	}
	if _, err := k.Helm(ctx, "uninstall", framework.OperatorRelease, "--namespace", framework.OperatorNamespace, "--wait", "--timeout", "3m"); err != nil {
		return err
	}
	for _, crd := range crds {
		if err := k.Client.Delete(ctx, crd); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete CRD %s: %w", crd.GetName(), err)
		}
		if err := framework.WaitForDeletion(ctx, k.Client, crd, 2*time.Minute); err != nil {
			return err
		}
	}
	return nil
}

// refuseValkeyObjects fails while any object of a valkey.io CRD exists (a cluster of
// make demo, say): the swap would delete it. The run checks it first too, so that it does
// not find out at its end.
func refuseValkeyObjects(ctx context.Context, c client.Client) error {
	crds, err := valkeyCRDs(ctx, c)
	if err != nil {
		return err
	}
	var left []string
	for _, crd := range crds {
		names, err := objectsOf(ctx, c, crd)
		if err != nil {
			return err
		}
		left = append(left, names...)
	}
	if len(left) > 0 {
		return fmt.Errorf("BENCH_PEER=1 replaces our CRDs with the peer's, which would delete %s: delete them first", strings.Join(left, ", "))
	}
	return nil
}

// valkeyCRDs lists the CRDs of the valkey.io group.
func valkeyCRDs(ctx context.Context, c client.Client) ([]*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinitionList"})
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("list CRDs: %w", err)
	}
	var out []*unstructured.Unstructured
	for i := range list.Items {
		if group, _, _ := unstructured.NestedString(list.Items[i].Object, "spec", "group"); group == "valkey.io" {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// objectsOf names the objects of a CRD ("ValkeyCluster ns/name"), read as metadata.
func objectsOf(ctx context.Context, c client.Client, crd *unstructured.Unstructured) ([]string, error) {
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	version := ""
	for _, v := range versions {
		if vm, _ := v.(map[string]any); vm["storage"] == true {
			version = fmt.Sprint(vm["name"])
		}
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: version, Kind: kind + "List"})
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("list %ss: %w", kind, err)
	}
	var out []string
	for _, o := range list.Items {
		out = append(out, fmt.Sprintf("%s %s/%s", kind, o.Namespace, o.Name))
	}
	return out, nil
}
