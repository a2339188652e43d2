package cluster

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/internal/membership"
)

// memberFinalizer holds a ValkeyNode that is being deleted until its server has handed
// over its slots and every other member has forgotten it.
const memberFinalizer = "valkey.io/member"

// unpublished is the first Secret a member mounts that its producer has not named in the
// cluster's status yet, nil when all are named.
func unpublished(vc *v1alpha1.ValkeyCluster) *v1alpha1.NotPublishedError {
	for _, of := range []func(*v1alpha1.ValkeyCluster) (string, error){
		v1alpha1.ACLSecretOf, v1alpha1.SystemUsersSecretOf, v1alpha1.AcceptedTLSSecretOf,
	} {
		if _, err := of(vc); err != nil {
			return err.(*v1alpha1.NotPublishedError)
		}
	}
	return nil
}

// awaitPublished stops the pass before anything that creates or changes a member while
// the acl- or tls-controller has not named in the cluster's status a Secret the members
// mount: no name is guessed, and Progressing says what the producer reports.
func (r *Reconciler) awaitPublished(_ context.Context, s *scope) (time.Duration, error) {
	if s.Unpublished == nil {
		return 0, nil
	}
	s.progress(s.Unpublished.Reason, "%s", s.Unpublished.Error())
	// The producer's status write is a change of the cluster, which brings the next pass.
	return plan.RequeueSteady, nil
}

// newMemberName is {cluster}-{5 random characters}: identity lives in labels.
func newMemberName(cluster string) (string, error) {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			return "", err
		}
		b[i] = alphabet[n.Int64()]
	}
	return cluster + "-" + string(b), nil
}

// createMember creates a ValkeyNode for shard s.
func (r *Reconciler) createMember(ctx context.Context, vc *v1alpha1.ValkeyCluster, s int32, why string) (*v1alpha1.ValkeyNode, error) {
	for attempt := 0; attempt < 5; attempt++ {
		name, err := newMemberName(vc.Name)
		if err != nil {
			return nil, err
		}
		vn := &v1alpha1.ValkeyNode{
			ObjectMeta: metav1.ObjectMeta{
				Name:       name,
				Namespace:  vc.Namespace,
				Labels:     v1alpha1.ShardLabels(vc.Name, s),
				Finalizers: []string{memberFinalizer},
			},
			Spec: plan.DesiredSpec(vc, s),
		}
		vn.Spec.Revision = 1
		if err := controllerutil.SetControllerReference(vc, vn, r.Scheme); err != nil {
			return nil, err
		}
		err = r.Create(ctx, vn)
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("create member of shard %d: %w", s, err)
		}
		r.event(vc, nil, eventNormal, "MemberCreated", "Create", "created member %s for shard %d (%s)", name, s, why)
		return vn, nil
	}
	return nil, fmt.Errorf("create member of shard %d: no free name after 5 attempts", s)
}

// listMembers returns the ValkeyNodes the cluster owns, from the cache.
func (r *Reconciler) listMembers(ctx context.Context, vc *v1alpha1.ValkeyCluster) ([]*v1alpha1.ValkeyNode, error) {
	return r.listMembersFrom(ctx, r.Client, vc)
}

// countMembers counts the members of each shard that are not leaving, asking the API server
// itself: the cache may not show the members created by the previous pass yet, and a
// decision to create members taken on it would create them twice.
func (r *Reconciler) countMembers(ctx context.Context, vc *v1alpha1.ValkeyCluster) (map[int32]int, error) {
	reader := client.Reader(r.Client)
	if r.APIReader != nil {
		reader = r.APIReader
	}
	nodes, err := r.listMembersFrom(ctx, reader, vc)
	if err != nil {
		return nil, err
	}
	out := map[int32]int{}
	for _, vn := range nodes {
		if vn.DeletionTimestamp.IsZero() {
			out[vn.Spec.ShardIndex]++
		}
	}
	return out, nil
}

func (r *Reconciler) listMembersFrom(ctx context.Context, reader client.Reader, vc *v1alpha1.ValkeyCluster) ([]*v1alpha1.ValkeyNode, error) {
	list, err := membership.Of(ctx, reader, vc)
	if err != nil {
		return nil, err
	}
	out := make([]*v1alpha1.ValkeyNode, len(list))
	for i := range list {
		out[i] = &list[i]
	}
	return out, nil
}

// retire deletes a member; its finalizer keeps it until it has left the Valkey cluster.
func (r *Reconciler) retire(ctx context.Context, vc *v1alpha1.ValkeyCluster, m *plan.Member, why string) error {
	if m.Leaving() {
		return nil
	}
	if err := r.Delete(ctx, m.Node); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("retire member %s: %w", m.Name(), err)
	}
	r.event(vc, m.Node, eventNormal, "MemberRetiring", "Retire", "retiring member %s of shard %d: %s", m.Name(), m.Shard(), why)
	return nil
}

// releaseFinalizer lets the API server delete a member that has left.
func (r *Reconciler) releaseFinalizer(ctx context.Context, vn *v1alpha1.ValkeyNode) error {
	if !controllerutil.ContainsFinalizer(vn, memberFinalizer) {
		return nil
	}
	patch := client.MergeFrom(vn.DeepCopy())
	controllerutil.RemoveFinalizer(vn, memberFinalizer)
	if err := r.Patch(ctx, vn, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("release member %s: %w", vn.Name, err)
	}
	return nil
}
