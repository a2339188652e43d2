package certs

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// The operator's copy of a certificate ({cluster}-tls-accepted) holds the three keys the
// pods mount and, during a CA change, the CAs members may still serve certificates of.
// Its revision is computed from its keys. The Secret it was taken from and the state of
// its rollout are the cluster's status.tls (secretName, rollout), written after the copy.
const (
	// KeyPreviousCA holds the CAs of earlier revisions while the rollout of a new
	// ca.crt is not complete. Pods do not mount it; the controller trusts it when it
	// connects, so it reaches members that still serve a certificate of the old CA.
	KeyPreviousCA = "previous-ca.crt"
)

// The annotations of the copy in which earlier versions kept its source and revision
// and the rollout's state. A copy whose revision status.tls does not describe yet is read
// from them when they name that revision (a rollout under way during an upgrade goes
// on); they are removed once the status holds the rollout, and never written.
const (
	legacySource      = "valkey.io/tls-source"
	legacyRevision    = "valkey.io/tls-revision"
	legacyReloadAfter = "valkey.io/tls-reload-after"
	legacyRolledOut   = "valkey.io/tls-rolled-out"
)

var legacyAnnotations = []string{legacySource, legacyRevision, legacyReloadAfter, legacyRolledOut}

// served is the operator's copy as the pass read it, with its rollout's state.
type served struct {
	secret *corev1.Secret
	// cert is the parsed copy; nil when the copy cannot be parsed (it always can, unless
	// someone edited it).
	cert *Certificate
	// rev is the revision of the copy's keys; source the user's Secret it was taken from.
	rev, source string
	// reloadAfter is set when the served leaf cannot show that a member loaded the
	// revision (ca.crt or the chain changed but not the leaf, or the revision came
	// before the previous one was rolled out): members count as serving it only after
	// a reload at or after this time, when the kubelet has surely updated every pod's
	// files. rolled says every member was seen serving the revision.
	reloadAfter time.Time
	rolled      bool
}

// revision returns the copy's revision, "" when there is no copy.
func (s *served) revision() string {
	if s == nil || s.secret == nil {
		return ""
	}
	return s.rev
}

// rolledOut reports whether every member was seen serving the copy's revision.
func (s *served) rolledOut() bool {
	return s.revision() != "" && s.rolled
}

// rollout is status.tls.rollout of the copy.
func (s *served) rollout() *v1alpha1.TLSRolloutStatus {
	if s.rolledOut() {
		return &v1alpha1.TLSRolloutStatus{Phase: v1alpha1.TLSRolledOut}
	}
	out := &v1alpha1.TLSRolloutStatus{Phase: v1alpha1.TLSRollingOut}
	if !s.reloadAfter.IsZero() {
		t := metav1.NewTime(s.reloadAfter)
		out.ReloadAfter = &t
	}
	return out
}

// rolloutFrom sets the source and the rollout's state of the copy out from st when it
// describes the copy's revision, and reports whether it did.
func rolloutFrom(st *v1alpha1.TLSStatus, out *served) bool {
	if st == nil || st.Rollout == nil || st.Revision != out.rev {
		return false
	}
	out.source, out.rolled = st.SecretName, st.Rollout.Phase == v1alpha1.TLSRolledOut
	if st.Rollout.ReloadAfter != nil {
		out.reloadAfter = st.Rollout.ReloadAfter.UTC()
	}
	return true
}

// legacyRolloutFrom does what rolloutFrom does from the copy's legacy annotations.
func legacyRolloutFrom(out *served) bool {
	a := out.secret.Annotations
	if a[legacyRevision] == "" || a[legacyRevision] != out.rev {
		return false
	}
	out.source, out.rolled = a[legacySource], a[legacyRolledOut] == out.rev
	if t, err := time.Parse(time.RFC3339, a[legacyReloadAfter]); err == nil {
		out.reloadAfter = t
	}
	return true
}

// hasLegacyAnnotations reports whether the copy still carries a legacy annotation.
func hasLegacyAnnotations(s *corev1.Secret) bool {
	for _, k := range legacyAnnotations {
		if _, ok := s.Annotations[k]; ok {
			return true
		}
	}
	return false
}

// trust returns the CAs the controller accepts from members: ca.crt and the CAs of
// earlier revisions whose rollout is not complete.
func (s *served) trust() *x509.CertPool {
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(s.secret.Data[KeyCA])
	p.AppendCertsFromPEM(s.secret.Data[KeyPreviousCA])
	return p
}

// readSecret returns the Secret name of the cluster's namespace, nil when it does not
// exist.
func (r *Reconciler) readSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	var s corev1.Secret
	// Users' Secrets are not cached (only the operator's own are).
	if err := r.Secrets().Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read Secret %s: %w", name, err)
	}
	return &s, nil
}

// readServed reads the operator's copy and its rollout's state. A Secret of that name that
// the cluster does not control is reported as a conflict and never touched.
//
// The state is the cluster's status.tls when it describes the copy's revision, else the
// legacy annotations of the copy. When neither does, the status in the cache may be older
// than the copy (the controller writes the copy, then the status), so the cluster is read
// again from the API server. When that does not describe it either (the status write
// after a new copy failed), the rollout starts over, with the reload time a new copy
// whose leaf cannot prove the revision gets.
func (r *Reconciler) readServed(ctx context.Context, vc *v1alpha1.ValkeyCluster, now time.Time) (*served, string, error) {
	name := v1alpha1.TLSSecretName(vc.Name)
	s, err := r.readSecret(ctx, vc.Namespace, name)
	if err != nil || s == nil {
		return nil, "", err
	}
	if !metav1.IsControlledBy(s, vc) {
		return nil, fmt.Sprintf("Secret %s exists and is not the operator's copy of this cluster's certificate; "+
			"the operator keeps the accepted certificate under that name, so rename the certificate Secret (or delete the other one)", name), nil
	}
	out := &served{secret: s, rev: Revision(s.Data)}
	out.cert, _ = Parse(s.Data)
	if rolloutFrom(vc.Status.TLS, out) || legacyRolloutFrom(out) {
		return out, "", nil
	}
	if r.APIReader != nil {
		var fresh v1alpha1.ValkeyCluster
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(vc), &fresh); err != nil {
			return nil, "", fmt.Errorf("read cluster %s: %w", vc.Name, err)
		}
		if rolloutFrom(fresh.Status.TLS, out) {
			vc.Status.TLS = fresh.Status.TLS // what this pass's status write compares with
			return out, "", nil
		}
	}
	log.FromContext(ctx).Info("the cluster's status does not describe the copy's revision; its rollout starts over", "revision", out.rev)
	out.source = sourceName(vc)
	out.reloadAfter = ceilSecond(now.Add(r.Delay()))
	return out, "", nil
}

// copyContent is what the copy must hold for an accepted Secret, and the state of the
// rollout that goes with it.
type copyContent struct {
	Data map[string][]byte
	// Source is the user's Secret the content comes from.
	Source string
	// ReloadAfter and RolledOut are the rollout's state (see served).
	ReloadAfter time.Time
	RolledOut   bool
	// NewRevision reports that the content to serve changes.
	NewRevision bool
}

// nextCopy computes the copy for the accepted data of Secret source, given the current
// copy prev (nil when none): the three keys; the CAs members may still serve
// certificates of while the rollout is incomplete; and, when the leaf cannot show the
// revision (see leafProves), the time after which a reload surely reads the new files.
func nextCopy(prev *served, accepted *Certificate, data map[string][]byte, source string, now time.Time, delay time.Duration) copyContent {
	out := copyContent{
		Data:   map[string][]byte{KeyCA: data[KeyCA], KeyCert: data[KeyCert], KeyKey: data[KeyKey]},
		Source: source,
	}
	if prev == nil {
		out.NewRevision = true
		return out
	}
	old := prev.secret
	if prev.revision() == accepted.Revision {
		// Same content (the Secret was renamed, or only its other keys changed): the
		// rollout state stays.
		out.ReloadAfter, out.RolledOut = prev.reloadAfter, prev.rolledOut()
		if p := old.Data[KeyPreviousCA]; len(p) > 0 {
			out.Data[KeyPreviousCA] = p
		}
		return out
	}
	out.NewRevision = true
	if p := previousCAs(old, prev.rolledOut(), data[KeyCA]); len(p) > 0 {
		out.Data[KeyPreviousCA] = p
	}
	if !leafProves(prev, accepted) {
		out.ReloadAfter = ceilSecond(now.Add(delay))
	}
	return out
}

// leafProves reports whether a member showing the leaf of next has surely loaded all of
// next's files. valkey-server reads tls.crt before ca.crt, and the kubelet swaps a
// volume's files at once, so a member that loaded a new leaf loaded the ca.crt beside it
// too. That holds when the leaf is new and every member was seen serving the previous
// revision (so no member still runs an older revision that had the same leaf).
func leafProves(prev *served, next *Certificate) bool {
	return prev.cert != nil && prev.cert.Fingerprint != next.Fingerprint && prev.rolledOut()
}

// ceilSecond rounds t up to a whole second, so status.tls.rollout.reloadAfter (which has
// no fraction) never names a time before t.
func ceilSecond(t time.Time) time.Time {
	if r := t.Truncate(time.Second); !r.Equal(t) {
		return r.Add(time.Second)
	}
	return t
}

// previousCAs are the CAs members may still trust or serve certificates of: the old
// ca.crt and, when its rollout was not complete, the CAs before it.
func previousCAs(old *corev1.Secret, rolledOut bool, newCA []byte) []byte {
	var b []byte
	if !bytes.Equal(old.Data[KeyCA], newCA) {
		b = append(b, old.Data[KeyCA]...)
	}
	if !rolledOut {
		b = append(b, old.Data[KeyPreviousCA]...)
	}
	return b
}

// publish writes the accepted certificate into the copy when its content differs, and
// takes the rollout's state that goes with it.
func (r *Reconciler) publish(ctx context.Context, s *scope) error {
	accepted := s.outcome.Verdict.Cert
	want := nextCopy(s.served, accepted, s.source.Data, s.source.Name, s.Now, r.Delay())
	if s.served == nil || !copyUpToDate(s.served.secret, want) {
		sec, err := r.writeCopy(ctx, s.Cluster, s.served, want)
		if err != nil {
			return err
		}
		if want.NewRevision {
			r.announce(ctx, s)
		}
		s.served = &served{secret: sec, cert: accepted, rev: accepted.Revision}
	}
	s.served.source, s.served.reloadAfter, s.served.rolled = want.Source, want.ReloadAfter, want.RolledOut
	return nil
}

// copyUpToDate reports whether the copy already holds want's keys.
func copyUpToDate(s *corev1.Secret, want copyContent) bool {
	if len(s.Data) != len(want.Data) {
		return false
	}
	for k, v := range want.Data {
		if !bytes.Equal(s.Data[k], v) {
			return false
		}
	}
	return true
}

// writeCopy creates or updates the copy with want, labelled as the cluster's and
// controlled by it (deleted with it).
func (r *Reconciler) writeCopy(ctx context.Context, vc *v1alpha1.ValkeyCluster, prev *served, want copyContent) (*corev1.Secret, error) {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: vc.Namespace, Name: v1alpha1.TLSSecretName(vc.Name)},
		Type: corev1.SecretTypeTLS}
	if prev != nil {
		sec = prev.secret.DeepCopy()
	}
	if sec.Labels == nil {
		sec.Labels = map[string]string{}
	}
	maps.Copy(sec.Labels, v1alpha1.ClusterLabels(vc.Name))
	for _, k := range legacyAnnotations {
		delete(sec.Annotations, k)
	}
	sec.Data = want.Data
	if err := controllerutil.SetControllerReference(vc, sec, r.Scheme); err != nil {
		return nil, fmt.Errorf("own Secret %s: %w", sec.Name, err)
	}
	if prev == nil {
		if err := r.Client.Create(ctx, sec); err != nil {
			return nil, fmt.Errorf("create Secret %s: %w", sec.Name, err)
		}
		return sec, nil
	}
	if err := r.Client.Update(ctx, sec); err != nil {
		return nil, fmt.Errorf("update Secret %s: %w", sec.Name, err)
	}
	return sec, nil
}

// dropLegacyAnnotations removes the legacy annotations from the copy once the cluster's
// status holds its rollout.
func (r *Reconciler) dropLegacyAnnotations(ctx context.Context, s *scope) error {
	if s.served == nil || !hasLegacyAnnotations(s.served.secret) || !rolloutFrom(s.Cluster.Status.TLS, &served{rev: s.served.rev}) {
		return nil
	}
	sec := s.served.secret.DeepCopy()
	for _, k := range legacyAnnotations {
		delete(sec.Annotations, k)
	}
	if err := r.Client.Update(ctx, sec); err != nil {
		return fmt.Errorf("remove the rollout annotations of Secret %s: %w", sec.Name, err)
	}
	log.FromContext(ctx).Info("removed the rollout annotations of an earlier version; the cluster's status holds the rollout", "secret", sec.Name)
	s.served.secret = sec
	return nil
}

// announce logs and records a newly accepted certificate, and warns when the CA changes
// without a transition: the new CAs do not trust the certificate members served until
// now, or the old CAs do not trust the new one.
func (r *Reconciler) announce(ctx context.Context, s *scope) {
	c := s.outcome.Verdict.Cert
	log.FromContext(ctx).Info("certificate accepted", "secret", s.source.Name, "revision", c.Revision,
		"fingerprint", c.Fingerprint, "notAfter", formatTime(c.Leaf.NotAfter))
	r.Recorder.Eventf(s.Cluster, nil, corev1.EventTypeNormal, "CertificateAccepted", "Accept",
		"certificate from Secret %s accepted (revision %s, fingerprint %s, expires %s); Secret %s updated, members reload it live",
		s.source.Name, c.Revision, c.Fingerprint, formatTime(c.Leaf.NotAfter), v1alpha1.TLSSecretName(s.Cluster.Name))
	if s.served == nil || s.served.cert == nil {
		return
	}
	old := s.served.cert
	if trusts(c.Roots, old, s.Now) && trusts(old.Roots, c, s.Now) {
		return
	}
	log.FromContext(ctx).Info("the CA changed without a transition bundle", "secret", s.source.Name, "revision", c.Revision)
	r.Recorder.Eventf(s.Cluster, nil, corev1.EventTypeWarning, "CAChangedWithoutBundle", "Accept",
		"the new ca.crt and the previous one do not trust each other's certificate: until every member serves revision %s, "+
			"new cluster bus and replication links between members that reloaded and members that did not are refused (existing links stay up); "+
			"change a CA in steps with both CAs in ca.crt", c.Revision)
}

// trusts reports whether roots verify c's chain (any usage) at now.
func trusts(roots []*x509.Certificate, c *Certificate, now time.Time) bool {
	_, err := c.Leaf.Verify(x509.VerifyOptions{Roots: certPool(roots), Intermediates: certPool(c.Intermediates),
		CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	return err == nil
}

// markRolledOut records that every member serves the copy's revision (in status.tls,
// written at the end of the pass) and forgets the CAs of earlier revisions.
func (r *Reconciler) markRolledOut(ctx context.Context, s *scope) error {
	if len(s.served.secret.Data[KeyPreviousCA]) > 0 {
		sec := s.served.secret.DeepCopy()
		delete(sec.Data, KeyPreviousCA)
		if err := r.Client.Update(ctx, sec); err != nil {
			return fmt.Errorf("forget the earlier CAs in Secret %s: %w", sec.Name, err)
		}
		s.served.secret = sec
	}
	s.served.rolled, s.served.reloadAfter = true, time.Time{}
	return nil
}
