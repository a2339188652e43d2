package certs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/publish"
)

// issue keeps the cluster's cert-manager objects as spec.tls.certManager asks (see
// certmanager.go) and learns the state of its Certificate into the outcome; the pass
// then checks the Secret cert-manager writes as it checks a Secret you keep. A Secret
// cert-manager would write for the cluster that is not the cluster's, or an object of
// one of the names the controller keeps that the cluster does not control, stops the
// pass with a NameConflictError: nothing is taken over.
func (r *Reconciler) issue(ctx context.Context, s *scope) error {
	vc := s.Cluster
	iss := &issuance{Certificate: certificateName(vc.Name)}
	s.outcome.Issuance = iss
	ok, err := r.certManager.installed(s.Now)
	if err != nil {
		return err
	}
	if !ok {
		iss.NotInstalled = true
		s.Requeue(r.certManager.recheckPeriod())
		return nil
	}
	if err := r.certManager.watch(ctx); err != nil {
		return err
	}
	secrets, err := r.issuedSecrets(ctx, s)
	if err != nil {
		return err
	}
	crt, err := r.keepObjects(ctx, s, wantedObjects(vc, s.certNames))
	if err != nil {
		return err
	}
	member, ok := crt.(*cmapi.Certificate)
	if !ok {
		return fmt.Errorf("keep Certificate %s: not read back", iss.Certificate)
	}
	*iss = issuanceOf(member)
	return r.ownSecrets(ctx, s, secrets)
}

// forgetIssuer deletes the cert-manager objects the controller kept for a cluster that
// no longer asks for them (its certificate is now a Secret you keep). The Secrets
// cert-manager wrote stay (one may be the Secret now named) until the cluster goes. It
// never holds up the pass of such a cluster: it reads only from informers that have
// listed their objects (a pass a recheck period later looks again), and a failure is
// logged; what it leaves goes with the cluster.
func (r *Reconciler) forgetIssuer(ctx context.Context, s *scope) {
	ok, err := r.certManager.installed(s.Now)
	if err == nil && ok {
		err = r.certManager.watch(ctx)
	}
	if err != nil {
		log.FromContext(ctx).Error(err, "could not look for cert-manager objects the cluster no longer asks for")
	}
	if err != nil || !ok {
		return
	}
	if !r.certManager.synced() {
		s.Requeue(r.certManager.recheckPeriod())
		return
	}
	if _, err := r.keepObjects(ctx, s, nil); err != nil {
		log.FromContext(ctx).Error(err, "could not delete the cert-manager objects the cluster no longer asks for; they go with the cluster")
	}
}

// recheckPeriod is how soon a cluster waiting for cert-manager's CRDs is looked at again.
func (a *certManagerAPI) recheckPeriod() time.Duration {
	if a == nil {
		return DefaultCertManagerRecheck
	}
	return a.recheck
}

// keepObjects creates, updates and deletes the controller's cert-manager objects of the
// cluster so that exactly want exist, and returns the members' Certificate (the last of
// want) as it stands; nil when want is empty. An object of one of those names that the
// cluster does not control is left alone, and is a NameConflictError when wanted.
func (r *Reconciler) keepObjects(ctx context.Context, s *scope, want []client.Object) (client.Object, error) {
	vc := s.Cluster
	var member client.Object
	for _, have := range ownedObjects(vc) {
		i := slices.IndexFunc(want, func(o client.Object) bool {
			return o.GetName() == have.GetName() && kindOf(o) == kindOf(have)
		})
		exists, err := r.readOwned(ctx, have, i >= 0)
		if err != nil {
			return nil, err
		}
		controlled := exists && metav1.IsControlledBy(have, vc)
		var obj client.Object
		switch {
		case exists && !controlled && i >= 0:
			return nil, &publish.NameConflictError{Kind: kindOf(have), Name: have.GetName()}
		case exists && !controlled:
		case i < 0 && exists:
			if err := r.Client.Delete(ctx, have); err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("delete %s %s: %w", kindOf(have), have.GetName(), err)
			}
			log.FromContext(ctx).Info("deleted a cert-manager object the spec no longer asks for", "kind", kindOf(have), "name", have.GetName())
			r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, "CertManagerObjectDeleted", "Issue",
				"deleted %s %s: spec.tls no longer asks cert-manager for it", kindOf(have), have.GetName())
		case i < 0:
		case !exists:
			if err := r.Client.Create(ctx, want[i]); err != nil {
				return nil, fmt.Errorf("create %s %s: %w", kindOf(want[i]), want[i].GetName(), err)
			}
			r.created(ctx, vc, want[i])
			obj = want[i]
		default:
			if obj, err = r.updateOwned(ctx, vc, have, want[i]); err != nil {
				return nil, err
			}
		}
		if i >= 0 && i == len(want)-1 {
			member = obj
		}
	}
	return member, nil
}

// readOwned reads an object of one of the names the controller keeps into obj: from the
// cache and, for one that is wanted, from the API server when the cache does not hold it
// (just created, or someone else's, whose labels the cache does not select). So only a
// create costs a read of the API server.
func (r *Reconciler) readOwned(ctx context.Context, obj client.Object, wanted bool) (bool, error) {
	err := r.certManager.get(ctx, obj)
	if apierrors.IsNotFound(err) && wanted && r.APIReader != nil {
		err = r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	}
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read %s %s: %w", kindOf(obj), obj.GetName(), err)
	}
	return true, nil
}

// updateOwned writes want's spec and labels into have when they differ, and returns the
// object as it stands.
func (r *Reconciler) updateOwned(ctx context.Context, vc *v1alpha1.ValkeyCluster, have, want client.Object) (client.Object, error) {
	labelsMatch := equality.Semantic.DeepEqual(have.GetLabels(), want.GetLabels())
	switch h := have.(type) {
	case *cmapi.Certificate:
		w := want.(*cmapi.Certificate)
		if labelsMatch && equality.Semantic.DeepEqual(h.Spec, w.Spec) {
			return have, nil
		}
		before := h.Spec
		h.Spec, h.Labels = w.Spec, w.Labels
		if err := r.Client.Update(ctx, h); err != nil {
			return nil, fmt.Errorf("update Certificate %s: %w", h.Name, err)
		}
		r.updated(ctx, vc, h, before, w.Spec)
	case *cmapi.Issuer:
		w := want.(*cmapi.Issuer)
		if labelsMatch && equality.Semantic.DeepEqual(h.Spec, w.Spec) {
			return have, nil
		}
		h.Spec, h.Labels = w.Spec, w.Labels
		if err := r.Client.Update(ctx, h); err != nil {
			return nil, fmt.Errorf("update Issuer %s: %w", h.Name, err)
		}
		r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, "CertManagerObjectUpdated", "Issue", "updated Issuer %s as spec.tls.certManager asks", h.Name)
	}
	return have, nil
}

// created logs and records a new cert-manager object.
func (r *Reconciler) created(ctx context.Context, vc *v1alpha1.ValkeyCluster, obj client.Object) {
	log.FromContext(ctx).Info("created a cert-manager object", "kind", kindOf(obj), "name", obj.GetName())
	crt, ok := obj.(*cmapi.Certificate)
	if !ok || crt.Spec.IsCA {
		r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, "CertManagerObjectCreated", "Issue",
			"created %s %s for the cluster's own CA", kindOf(obj), obj.GetName())
		return
	}
	ref := crt.Spec.IssuerRef
	r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, "CertificateRequested", "Issue",
		"asked cert-manager for Certificate %s (Secret %s) from %s %s: %d DNS names, %d IP addresses",
		crt.Name, crt.Spec.SecretName, ref.Kind, ref.Name, len(crt.Spec.DNSNames), len(crt.Spec.IPAddresses))
}

// updated logs and records a change of the members' Certificate, naming the names it
// adds and drops.
func (r *Reconciler) updated(ctx context.Context, vc *v1alpha1.ValkeyCluster, crt *cmapi.Certificate, before, after cmapi.CertificateSpec) {
	old := append(slices.Clone(before.DNSNames), before.IPAddresses...)
	cur := append(slices.Clone(after.DNSNames), after.IPAddresses...)
	added, dropped := difference(cur, old), difference(old, cur)
	log.FromContext(ctx).Info("updated the cert-manager Certificate", "name", crt.Name, "added", added, "dropped", dropped)
	what := "its issuer, lifetime or key"
	if len(added)+len(dropped) > 0 {
		var parts []string
		if len(added) > 0 {
			parts = append(parts, "adds "+strings.Join(added, ", "))
		}
		if len(dropped) > 0 {
			parts = append(parts, "drops "+strings.Join(dropped, ", "))
		}
		what = "the names: it " + strings.Join(parts, " and ")
	}
	r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, "CertificateUpdated", "Issue",
		"updated Certificate %s (%s); cert-manager issues a new certificate, rolled out live once it passes the checks", crt.Name, what)
}

// difference lists the entries of a that b lacks.
func difference(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// issuedSecret is a Secret cert-manager writes for the cluster, as its metadata reads.
type issuedSecret struct {
	name string
	meta *metav1.PartialObjectMetadata // nil: it does not exist yet
}

// issuedSecrets reads the metadata of the Secrets cert-manager writes for the cluster
// ({cluster}-tls, and {cluster}-ca with the cluster's own CA). One that exists without
// the cluster's labels is not cert-manager's for this cluster (they come from the
// Certificate's secretTemplate): a NameConflictError, and no Certificate is made that
// would overwrite it.
func (r *Reconciler) issuedSecrets(ctx context.Context, s *scope) ([]issuedSecret, error) {
	vc := s.Cluster
	names := []string{certificateName(vc.Name)}
	if certManagerOf(vc).IssuerRef == nil {
		names = append(names, caName(vc.Name))
	}
	var out []issuedSecret
	for _, name := range names {
		m, err := r.secretMetadata(ctx, vc.Namespace, name)
		if err != nil {
			return nil, err
		}
		if m != nil && !labelledFor(m, vc) {
			return nil, &publish.NameConflictError{Name: name}
		}
		out = append(out, issuedSecret{name: name, meta: m})
	}
	return out, nil
}

// labelledFor reports whether an object carries the cluster's labels.
func labelledFor(o client.Object, vc *v1alpha1.ValkeyCluster) bool {
	for k, v := range v1alpha1.ClusterLabels(vc.Name) {
		if o.GetLabels()[k] != v {
			return false
		}
	}
	return true
}

// secretMetadata reads a Secret's metadata: from the metadata cache (the operator's
// labelled Secrets), else from the API server; nil when it does not exist. Its content
// is never read: the CA's key stays out of the controller's memory.
func (r *Reconciler) secretMetadata(ctx context.Context, namespace, name string) (*metav1.PartialObjectMetadata, error) {
	m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}}
	key := client.ObjectKey{Namespace: namespace, Name: name}
	var err error = apierrors.NewNotFound(corev1.Resource("secrets"), name)
	if r.Metadata != nil {
		err = r.Metadata.Get(ctx, key, m)
	}
	if apierrors.IsNotFound(err) && r.APIReader != nil {
		err = r.APIReader.Get(ctx, key, m)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read Secret %s: %w", name, err)
	}
	return m, nil
}

// ownSecrets gives the Secrets cert-manager wrote for the cluster an owner reference to
// the cluster (not a controller reference: cert-manager writes them), so they are
// deleted with it; cert-manager leaves them behind when their Certificate goes.
func (r *Reconciler) ownSecrets(ctx context.Context, s *scope, secrets []issuedSecret) error {
	vc := s.Cluster
	for _, sec := range secrets {
		m := sec.meta
		if m == nil || slices.ContainsFunc(m.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == vc.UID }) {
			continue
		}
		orig := m.DeepCopy()
		m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(),
			Kind: "ValkeyCluster", Name: vc.Name, UID: vc.UID})
		if err := r.Client.Patch(ctx, m, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("give Secret %s an owner reference to the cluster: %w", sec.name, err)
		}
		log.FromContext(ctx).Info("the Secret cert-manager wrote is deleted with the cluster", "secret", sec.name)
	}
	return nil
}
