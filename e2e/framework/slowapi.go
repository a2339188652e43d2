package framework

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The API server of a busy production cluster answers slower than a fresh one: its etcd
// holds hundreds of megabytes of history. E2E_SLOW_API=bloat gives the cluster under
// test such an etcd before the suite's features run: bloatSecrets Secrets of
// bloatSecretBytes random bytes each are written in a namespace of their own, which is
// then deleted (etcd keeps the revisions until a compaction, and its file keeps its size
// until a defragmentation, which nothing here runs). A ConfigMap in kube-system marks a
// cluster already bloated, so that the suites of one run on the same cluster do it once.
const (
	bloatSecrets     = 200
	bloatSecretBytes = 900 << 10
	bloatNamespace   = "e2e-etcd-bloat"
	bloatMarker      = "e2e-etcd-bloated"
)

// slowAPI applies E2E_SLOW_API to a cluster that has just become usable.
func (k *Cluster) slowAPI(ctx context.Context, mode string) error {
	switch mode {
	case "":
		return nil
	case "bloat":
		return k.bloatEtcd(ctx)
	default:
		return fmt.Errorf("E2E_SLOW_API=%q: want bloat or nothing", mode)
	}
}

// bloatEtcd writes and deletes bloatSecrets large Secrets, once per cluster.
func (k *Cluster) bloatEtcd(ctx context.Context) error {
	marker := &corev1.ConfigMap{}
	err := k.Client.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: bloatMarker}, marker)
	if err == nil {
		fmt.Fprintf(os.Stderr, "e2e: E2E_SLOW_API=bloat: etcd was bloated at %s\n", marker.Data["at"])
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("read the bloat marker: %w", err)
	}
	start := time.Now()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bloatNamespace}}
	if err := k.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", bloatNamespace, err)
	}
	data := make([]byte, bloatSecretBytes)
	for i := range bloatSecrets {
		if _, err := rand.Read(data); err != nil {
			return err
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: bloatNamespace, Name: "bloat-" + strconv.Itoa(i)},
			Data: map[string][]byte{"data": data}}
		if err := k.Client.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create secret %s: %w", s.Name, err)
		}
	}
	if err := k.Client.Delete(ctx, ns); err != nil {
		return fmt.Errorf("delete namespace %s: %w", bloatNamespace, err)
	}
	if err := WaitForDeletion(ctx, k.Client, ns, 3*time.Minute); err != nil {
		return err
	}
	marker = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: bloatMarker},
		Data: map[string]string{"at": time.Now().UTC().Format(time.RFC3339), "secrets": strconv.Itoa(bloatSecrets), "bytes": strconv.Itoa(bloatSecretBytes)}}
	if err := k.Client.Create(ctx, marker); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the bloat marker: %w", err)
	}
	fmt.Fprintf(os.Stderr, "e2e: E2E_SLOW_API=bloat: wrote and deleted %d Secrets of %d KiB in %s\n",
		bloatSecrets, bloatSecretBytes>>10, time.Since(start).Round(100*time.Millisecond))
	return nil
}
