package certs

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/publish"
	"github.com/valkey-operator/valkey-operator/internal/status"
)

// FieldManager is the field manager of everything this controller writes.
const FieldManager = "tls-controller"

// checkOutcome is what the pass learnt about the certificate Secret.
type checkOutcome struct {
	// Source is the Secret spec.tls.certificate.secretName names, or the one
	// cert-manager writes.
	Source string
	// Issuance is the state of the cert-manager Certificate that writes Source, nil for
	// a Secret the user keeps.
	Issuance *issuance
	// Missing: the Secret does not exist.
	Missing bool
	// Conflict, when set, says why the operator cannot keep its copy.
	Conflict string
	// Verdict of the checks (when the Secret exists and there is no conflict).
	Verdict Verdict
}

// ReadyCondition computes TLSReady (pure). current is the certificate members serve (the
// operator's copy), nil when none was accepted yet. For a certificate cert-manager issues,
// what keeps it from the members comes first: cert-manager is not installed, its issuance
// failed, or it has not written the Secret yet.
func ReadyCondition(o checkOutcome, current *Certificate, gen int64) metav1.Condition {
	var reason, msg string
	iss := o.Issuance
	switch {
	case o.Conflict != "":
		reason, msg = v1alpha1.ReasonSecretNameConflict, o.Conflict
	case iss != nil && iss.NotInstalled:
		reason, msg = v1alpha1.ReasonCertManagerNotInstalled, "spec.tls.certManager asks cert-manager for the certificate, but cert-manager is not installed "+
			"(no certificates.cert-manager.io and issuers.cert-manager.io in the API): install cert-manager, or name a Secret you keep in spec.tls.certificate"
	case iss != nil && iss.Failed != "":
		reason, msg = v1alpha1.ReasonIssuingFailed, fmt.Sprintf("cert-manager could not issue Certificate %s (kubectl describe certificate %s): %s",
			iss.Certificate, iss.Certificate, iss.Failed)
	case iss != nil && o.Missing:
		reason, msg = v1alpha1.ReasonCertificateIssuing, fmt.Sprintf("waiting for cert-manager to write Secret %s for %s", o.Source, iss.describe())
	case o.Missing:
		reason, msg = v1alpha1.ReasonSecretMissing, fmt.Sprintf("Secret %s does not exist", o.Source)
	case o.Verdict.Refusal != nil:
		reason, msg = o.Verdict.Refusal.Reason, fmt.Sprintf("%s is refused: %s", describeSource(o), o.Verdict.Refusal.Message)
	default:
		return acceptedCondition(o, gen)
	}
	return conditions.New(v1alpha1.ConditionTLSReady, false, reason, msg+"; "+fallback(current), gen)
}

// describeSource names the certificate Secret, and who writes it.
func describeSource(o checkOutcome) string {
	if o.Issuance == nil {
		return "Secret " + o.Source
	}
	return fmt.Sprintf("Secret %s (written by cert-manager for Certificate %s)", o.Source, o.Issuance.Certificate)
}

// acceptedCondition is TLSReady for a certificate that passed every check; missing
// names make it a warning (reason NamesMissing), not a refusal. Of a certificate
// cert-manager issues, missing names are the ones a change added that cert-manager has
// not issued a certificate with yet.
func acceptedCondition(o checkOutcome, gen int64) metav1.Condition {
	c := o.Verdict.Cert
	msg := fmt.Sprintf("the certificate of %s (fingerprint %s, expires %s) passed every check",
		describeSource(o), c.Fingerprint, formatTime(c.Leaf.NotAfter))
	if len(o.Verdict.MissingNames) == 0 {
		return conditions.New(v1alpha1.ConditionTLSReady, true, v1alpha1.ReasonCertificateValid, msg, gen)
	}
	msg += fmt.Sprintf("; warning: it does not cover %s, so clients that check the host name cannot use these names",
		joinWords(o.Verdict.MissingNames))
	if iss := o.Issuance; iss != nil {
		msg += fmt.Sprintf(" until cert-manager issues what %s asks for", iss.describe())
	}
	return conditions.New(v1alpha1.ConditionTLSReady, true, v1alpha1.ReasonNamesMissing, msg, gen)
}

// fallback says what members use while the Secret is refused.
func fallback(current *Certificate) string {
	if current == nil {
		return "no certificate was accepted before, so members cannot start until this is fixed"
	}
	return fmt.Sprintf("members keep serving the certificate accepted before (fingerprint %s)", current.Fingerprint)
}

// AppliedCondition computes TLSApplied of a member (pure). res is the member's result,
// nil when there is no accepted certificate yet.
func AppliedCondition(res *memberResult, revision, fingerprint string, gen int64) metav1.Condition {
	switch {
	case res == nil:
		return conditions.Unknown(v1alpha1.ConditionTLSApplied, v1alpha1.ReasonCertificatePending, "no certificate has been accepted yet", gen)
	case res.Served:
		return conditions.New(v1alpha1.ConditionTLSApplied, true, v1alpha1.ReasonCertificateServed,
			fmt.Sprintf("the server serves certificate revision %s (fingerprint %s)", revision, fingerprint), gen)
	}
	return conditions.New(v1alpha1.ConditionTLSApplied, false, v1alpha1.ReasonCertificatePending,
		fmt.Sprintf("certificate revision %s is not served yet: %s", revision, res.Message), gen)
}

// tlsStatus describes the certificate members serve (the operator's copy) and its
// rollout for status.tls; nil when there is none.
func tlsStatus(s *served, names []string) *v1alpha1.TLSStatus {
	if s == nil || s.cert == nil {
		return nil
	}
	return &v1alpha1.TLSStatus{
		SecretName:         s.source,
		AcceptedSecretName: s.secret.Name,
		Revision:           s.revision(),
		Fingerprint:        s.cert.Fingerprint,
		NotAfter:           metav1.NewTime(s.cert.Leaf.NotAfter.UTC()),
		MissingNames:       MissingNames(s.cert.Leaf, names),
		Rollout:            s.rollout(),
	}
}

// report writes TLSReady, CertificateExpiring and status.tls on the cluster and
// TLSApplied on each member, with the events of what changed.
func (r *Reconciler) Report(ctx context.Context, s *scope) error {
	vc := s.Cluster
	ready := ReadyCondition(s.outcome, s.servedCert(), vc.Generation)
	if s.held != nil {
		ready = heldCondition(describeSource(s.outcome), s.held, s.servedCert(), r.window(s), vc.Generation)
	}
	ready = r.warnSharedCA(s, ready)
	expiring := r.expiringCondition(s)
	publish.Announce(r.Recorder, vc, ready, "Check")
	r.expiryEvent(vc, expiring)
	st := r.status()
	var errs []error
	if err := st.WriteCluster(ctx, vc, tlsStatus(s.served, s.names), ready, expiring); err != nil {
		errs = append(errs, err)
	}
	for i := range s.nodes {
		if err := r.reportNode(ctx, st, s, &s.nodes[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// warnSharedCA records in the CA index the CAs the members trust and, when another
// cluster trusts one of them, adds the warning to a TLSReady that is True (reason
// CAShared, unless names are missing too: NamesMissing stays, with both warnings).
func (r *Reconciler) warnSharedCA(s *scope, ready metav1.Condition) metav1.Condition {
	if r.cas == nil {
		return ready
	}
	key := types.NamespacedName{Namespace: s.Cluster.Namespace, Name: s.Cluster.Name}
	cert := s.servedCert()
	if cert == nil {
		r.cas.forget(key)
		return ready
	}
	w := sharedCAWarning(key.Namespace, r.cas.set(key, caFingerprints(cert)))
	if w == "" || ready.Status != metav1.ConditionTrue {
		return ready
	}
	ready.Message += "; " + w
	if ready.Reason == v1alpha1.ReasonCertificateValid {
		ready.Reason = v1alpha1.ReasonCAShared
		if old := conditions.Get(s.Cluster.Status.Conditions, ready.Type); old == nil || old.Reason != ready.Reason {
			r.Recorder.Eventf(s.Cluster, nil, corev1.EventTypeWarning, ready.Reason, "Check", "%s", ready.Message)
		}
	}
	return ready
}

// expiringCondition computes CertificateExpiring for the served certificate, Unknown
// when none was accepted, and keeps the time of its next change in the scope.
func (r *Reconciler) expiringCondition(s *scope) metav1.Condition {
	cert := s.servedCert()
	if cert == nil {
		return conditions.Unknown(v1alpha1.ConditionCertificateExpiring, v1alpha1.ReasonUnknown, "no certificate has been accepted yet", s.Cluster.Generation)
	}
	c, next := ExpiringCondition(cert.Leaf.NotAfter, s.Now, r.window(s), s.Cluster.Generation)
	s.Requeue(next)
	return c
}

// expiryEvent records an expiry warning when it is new.
func (r *Reconciler) expiryEvent(vc *v1alpha1.ValkeyCluster, expiring metav1.Condition) {
	if old := conditions.Get(vc.Status.Conditions, expiring.Type); expiring.Status == metav1.ConditionTrue && (old == nil || old.Reason != expiring.Reason) {
		r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, "CertificateExpiring", "Check", "%s", expiring.Message)
	}
}

// reportNode writes TLSApplied of one member, with an event when a reload made it serve
// the revision or when the server refused a reload.
func (r *Reconciler) reportNode(ctx context.Context, st publish.Status, s *scope, vn *v1alpha1.ValkeyNode) error {
	var cond metav1.Condition
	res, ok := s.results[vn.Name]
	if s.servedCert() == nil || !ok {
		cond = AppliedCondition(nil, "", "", vn.Generation)
	} else {
		cond = AppliedCondition(&res, s.served.revision(), s.served.cert.Fingerprint, vn.Generation)
	}
	old := conditions.Get(vn.Status.Conditions, cond.Type)
	if old == nil || old.Status != cond.Status || old.Message != cond.Message {
		switch {
		case res.Served && res.Reloaded:
			r.Recorder.Eventf(vn, nil, corev1.EventTypeNormal, "CertificateReloaded", "Reload",
				"the server reloaded its certificate live and serves revision %s", s.served.revision())
		case res.RefusedByServer != "":
			r.Recorder.Eventf(vn, nil, corev1.EventTypeWarning, "ReloadRefused", "Reload",
				"the server refused to reload its certificate files and keeps the certificate it had: %s", res.RefusedByServer)
		}
	}
	return st.WriteNode(ctx, vn, cond)
}

// ownedClusterConditions are the condition types this controller writes on a cluster.
var ownedClusterConditions = []string{v1alpha1.ConditionTLSReady, v1alpha1.ConditionCertificateExpiring}

// status is what this controller owns: TLSReady, CertificateExpiring and status.tls on
// clusters, TLSApplied on members.
func (r *Reconciler) status() publish.Status {
	return publish.Status{
		Writer:         status.Writer{Client: r.Client, FieldManager: FieldManager, Clock: r.Clock},
		Field:          "tls",
		Current:        func(vc *v1alpha1.ValkeyCluster) any { return vc.Status.TLS },
		Conditions:     ownedClusterConditions,
		NodeConditions: []string{v1alpha1.ConditionTLSApplied},
	}
}
