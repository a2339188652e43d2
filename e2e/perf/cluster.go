package perf

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// ReadyPoll is how often a timed wait looks at the cluster.
const ReadyPoll = 50 * time.Millisecond

// WaitReady polls a cluster until framework.ClusterReady holds and returns the time
// since start and the timeline of its Ready and Progressing conditions; with pods, the
// timeline also counts the cluster's Ready pods.
func WaitReady(ctx context.Context, c client.Client, vc *v1alpha1.ValkeyCluster, start time.Time, timeout time.Duration, pods bool) (time.Duration, Timeline, error) {
	return Poll(ctx, start, timeout, ReadyPoll, func(ctx context.Context) (bool, string, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(vc), vc); err != nil {
			return false, "", err
		}
		ok, _ := framework.ClusterReady(vc)
		state := ConditionState(vc)
		if pods {
			n, err := readyPods(ctx, c, vc)
			if err != nil {
				return false, "", err
			}
			state += fmt.Sprintf(" pods=%d", n)
		}
		return ok, state, nil
	})
}

// readyPods counts the cluster's Ready pods.
func readyPods(ctx context.Context, c client.Client, vc *v1alpha1.ValkeyCluster) (int, error) {
	var list corev1.PodList
	if err := c.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels{v1alpha1.LabelInstance: vc.Name}); err != nil {
		return 0, err
	}
	return len(framework.ReadyPods(&list)), nil
}

// UpdateCluster changes a cluster's spec with mutate on a fresh copy, retrying on
// conflicts and while the admission webhook does not answer (it may be restarting).
func UpdateCluster(ctx context.Context, c client.Client, vc *v1alpha1.ValkeyCluster, mutate func(*v1alpha1.ValkeyCluster)) error {
	backoff := retry.DefaultBackoff
	backoff.Steps, backoff.Cap = 12, 5*time.Second
	return retry.OnError(backoff, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err)
	}, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(vc), vc); err != nil {
			return err
		}
		mutate(vc)
		return c.Update(ctx, vc)
	})
}

// DeleteCluster deletes a cluster and waits until it and its pods are gone. A system
// users Secret that a finalizer still holds a few seconds later is released (so that
// the namespace can go) and its finalizers are returned: the operator should have.
func DeleteCluster(ctx context.Context, c client.Client, vc *v1alpha1.ValkeyCluster, timeout time.Duration) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := c.Delete(ctx, vc); client.IgnoreNotFound(err) != nil {
		return nil, err
	}
	if err := framework.WaitForDeletion(ctx, c, vc, timeout); err != nil {
		return nil, err
	}
	if err := WaitPodsGone(ctx, c, vc.Namespace, client.MatchingLabels{v1alpha1.LabelInstance: vc.Name}); err != nil {
		return nil, err
	}
	return releaseStuckSecret(ctx, c, vc)
}

// releaseStuckSecret gives the system users Secret three seconds to go, then removes
// the finalizers still holding it and returns them.
func releaseStuckSecret(ctx context.Context, c client.Client, vc *v1alpha1.ValkeyCluster) ([]string, error) {
	s := &corev1.Secret{}
	key := client.ObjectKey{Namespace: vc.Namespace, Name: v1alpha1.SystemUsersSecretName(vc.Name)}
	err := framework.Until(ctx, 3*time.Second, "Secret "+key.Name+" deleted", func(ctx context.Context) (bool, string, error) {
		err := c.Get(ctx, key, s)
		return apierrors.IsNotFound(err), "", client.IgnoreNotFound(err)
	})
	if err == nil || len(s.Finalizers) == 0 {
		return nil, nil
	}
	stuck := s.Finalizers
	patch := client.MergeFrom(s.DeepCopy())
	s.Finalizers = nil
	if err := c.Patch(ctx, s, patch); client.IgnoreNotFound(err) != nil {
		return stuck, fmt.Errorf("release Secret %s: %w", key.Name, err)
	}
	return stuck, nil
}
