package certs

import (
	"fmt"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// A cluster with spec.tls.certManager gets its certificate from cert-manager. The
// tls-controller keeps, controlled by the cluster (deleted with it):
//
//   - the Certificate {cluster}-tls, which cert-manager fulfils by writing Secret
//     {cluster}-tls: every name of CertificateNames, server and client authentication,
//     the duration, renewal and key the spec asks for, and the operator's labels on the
//     Secret (secretTemplate), so the operator's label-selected caches see it;
//   - without spec.tls.certManager.issuerRef, a CA of the cluster's own: a self-signed
//     Issuer {cluster}-selfsigned, the CA Certificate {cluster}-ca it signs (Secret
//     {cluster}-ca, ten years, a key cert-manager never rotates so renewing the CA keeps
//     the members' certificates valid) and the CA Issuer {cluster}-ca that signs the
//     members' certificate from that Secret.
//
// The Secret {cluster}-tls is then the certificate's source exactly as a Secret you keep
// is: checked, copied into {cluster}-tls-accepted, rolled out live, watched for expiry.
// cert-manager does not delete the Secrets it writes; the tls-controller gives them an
// owner reference to the cluster, so they go with it too.

// Names of the cert-manager objects of a cluster.
func certificateName(cluster string) string      { return cluster + "-tls" }
func caName(cluster string) string               { return cluster + "-ca" }
func selfSignedIssuerName(cluster string) string { return cluster + "-selfsigned" }

// caDuration is the lifetime of a cluster's own CA.
const caDuration = 10 * 365 * 24 * time.Hour

// sourceName is the Secret the cluster's certificate comes from: the one you name, or
// the one cert-manager writes.
func sourceName(vc *v1alpha1.ValkeyCluster) string {
	t := vc.Spec.TLS
	switch {
	case t == nil:
		return ""
	case t.CertManager != nil:
		return certificateName(vc.Name)
	case t.Certificate != nil:
		return t.Certificate.SecretName
	}
	return ""
}

// certManagerOf is the cluster's spec.tls.certManager, nil when it has none.
func certManagerOf(vc *v1alpha1.ValkeyCluster) *v1alpha1.CertManagerSpec {
	if vc.Spec.TLS == nil {
		return nil
	}
	return vc.Spec.TLS.CertManager
}

// ownedMeta is the metadata of an object the tls-controller keeps for a cluster.
func ownedMeta(vc *v1alpha1.ValkeyCluster, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: vc.Namespace, Name: name, Labels: v1alpha1.ClusterLabels(vc.Name),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(vc, v1alpha1.GroupVersion.WithKind("ValkeyCluster"))}}
}

// secretTemplate puts the operator's labels on the Secret cert-manager writes.
func secretTemplate(vc *v1alpha1.ValkeyCluster) *cmapi.CertificateSecretTemplate {
	return &cmapi.CertificateSecretTemplate{Labels: v1alpha1.ClusterLabels(vc.Name)}
}

// memberIssuer is the issuer of the members' certificate: spec.tls.certManager.issuerRef,
// or the cluster's own CA Issuer.
func memberIssuer(vc *v1alpha1.ValkeyCluster) cmmeta.IssuerReference {
	if r := certManagerOf(vc).IssuerRef; r != nil {
		return cmmeta.IssuerReference{Name: r.Name, Kind: string(r.KindOrDefault()), Group: r.GroupOrDefault()}
	}
	return cmmeta.IssuerReference{Name: caName(vc.Name), Kind: cmapi.IssuerKind, Group: v1alpha1.CertManagerGroup}
}

// memberCertificate is the Certificate of the members' certificate, covering names.
func memberCertificate(vc *v1alpha1.ValkeyCluster, names Names) *cmapi.Certificate {
	cm := certManagerOf(vc)
	spec := cmapi.CertificateSpec{
		SecretName:     certificateName(vc.Name),
		SecretTemplate: secretTemplate(vc),
		IssuerRef:      memberIssuer(vc),
		DNSNames:       names.DNSNames,
		IPAddresses:    names.IPAddresses,
		Duration:       cm.Duration,
		RenewBefore:    cm.RenewBefore,
		// Members are servers and clients of each other (cluster bus, replication).
		Usages: []cmapi.KeyUsage{cmapi.UsageServerAuth, cmapi.UsageClientAuth, cmapi.UsageDigitalSignature, cmapi.UsageKeyEncipherment},
		PrivateKey: &cmapi.CertificatePrivateKey{
			RotationPolicy: cmapi.RotationPolicyAlways,
			Encoding:       cmapi.PKCS8,
		},
		// Each change of the names is a new request; only the last one is kept.
		RevisionHistoryLimit: ptr.To[int32](1),
	}
	if k := cm.PrivateKey; k != nil {
		spec.PrivateKey.Algorithm = cmapi.PrivateKeyAlgorithm(k.Algorithm)
		spec.PrivateKey.Size = int(k.Size)
	}
	return &cmapi.Certificate{ObjectMeta: ownedMeta(vc, certificateName(vc.Name)), Spec: spec}
}

// selfSignedIssuer signs the cluster's own CA.
func selfSignedIssuer(vc *v1alpha1.ValkeyCluster) *cmapi.Issuer {
	return &cmapi.Issuer{ObjectMeta: ownedMeta(vc, selfSignedIssuerName(vc.Name)),
		Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{SelfSigned: &cmapi.SelfSignedIssuer{}}}}
}

// caCertificate is the cluster's own CA. Its key is never rotated: a renewed CA with the
// same key and name still verifies every member certificate the old one signed.
func caCertificate(vc *v1alpha1.ValkeyCluster) *cmapi.Certificate {
	return &cmapi.Certificate{ObjectMeta: ownedMeta(vc, caName(vc.Name)), Spec: cmapi.CertificateSpec{
		IsCA:           true,
		CommonName:     caName(vc.Name),
		Subject:        &cmapi.X509Subject{OrganizationalUnits: []string{vc.Namespace}},
		SecretName:     caName(vc.Name),
		SecretTemplate: secretTemplate(vc),
		IssuerRef:      cmmeta.IssuerReference{Name: selfSignedIssuerName(vc.Name), Kind: cmapi.IssuerKind, Group: v1alpha1.CertManagerGroup},
		Duration:       &metav1.Duration{Duration: caDuration},
		Usages:         []cmapi.KeyUsage{cmapi.UsageCertSign, cmapi.UsageCRLSign, cmapi.UsageDigitalSignature},
		PrivateKey: &cmapi.CertificatePrivateKey{Algorithm: cmapi.ECDSAKeyAlgorithm, Size: 256,
			RotationPolicy: cmapi.RotationPolicyNever, Encoding: cmapi.PKCS8},
		RevisionHistoryLimit: ptr.To[int32](1),
	}}
}

// caIssuer signs the members' certificate with the cluster's own CA.
func caIssuer(vc *v1alpha1.ValkeyCluster) *cmapi.Issuer {
	return &cmapi.Issuer{ObjectMeta: ownedMeta(vc, caName(vc.Name)),
		Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{CA: &cmapi.CAIssuer{SecretName: caName(vc.Name)}}}}
}

// wantedObjects are the cert-manager objects the cluster's spec asks for, in the order
// they are made (an issuer before what it signs); none without spec.tls.certManager.
func wantedObjects(vc *v1alpha1.ValkeyCluster, names Names) []client.Object {
	cm := certManagerOf(vc)
	if cm == nil {
		return nil
	}
	var out []client.Object
	if cm.IssuerRef == nil {
		out = append(out, selfSignedIssuer(vc), caCertificate(vc), caIssuer(vc))
	}
	return append(out, memberCertificate(vc, names))
}

// ownedObjects are every cert-manager object the tls-controller may keep for a cluster,
// empty, to read into: what is not wanted is deleted.
func ownedObjects(vc *v1alpha1.ValkeyCluster) []client.Object {
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: vc.Namespace, Name: name} }
	return []client.Object{
		&cmapi.Issuer{ObjectMeta: meta(selfSignedIssuerName(vc.Name))},
		&cmapi.Certificate{ObjectMeta: meta(caName(vc.Name))},
		&cmapi.Issuer{ObjectMeta: meta(caName(vc.Name))},
		&cmapi.Certificate{ObjectMeta: meta(certificateName(vc.Name))},
	}
}

// kindOf names an object's kind for conditions, events and errors.
func kindOf(o client.Object) string {
	switch o.(type) {
	case *cmapi.Certificate:
		return cmapi.CertificateKind
	case *cmapi.Issuer:
		return cmapi.IssuerKind
	}
	return fmt.Sprintf("%T", o)
}

// issuance is what a pass learnt of the cluster's cert-manager Certificate.
type issuance struct {
	// Certificate is its name.
	Certificate string
	// NotInstalled: cert-manager's CRDs are not installed.
	NotInstalled bool
	// Failed is cert-manager's message of an issuance that failed and waits for its
	// retry ("": none failed).
	Failed string
	// Pending says why the Certificate is not Ready ("": it is): cert-manager is issuing,
	// or has not looked at a change yet.
	Pending string
}

// issuanceOf reads the state of a Certificate from its status (pure): Ready, a failed
// issuance (Issuing False after a failure, until cert-manager retries), or pending.
func issuanceOf(c *cmapi.Certificate) issuance {
	out := issuance{Certificate: c.Name}
	var ready, issuing *cmapi.CertificateCondition
	for i := range c.Status.Conditions {
		switch cond := &c.Status.Conditions[i]; cond.Type {
		case cmapi.CertificateConditionReady:
			ready = cond
		case cmapi.CertificateConditionIssuing:
			issuing = cond
		}
	}
	if issuing != nil && issuing.Status == cmmeta.ConditionFalse && c.Status.LastFailureTime != nil && issuing.Reason != "Issued" {
		out.Failed = issuing.Message
		if out.Failed == "" {
			out.Failed = issuing.Reason
		}
		return out
	}
	switch {
	case ready == nil:
		out.Pending = "cert-manager has not reported on it yet"
	case ready.ObservedGeneration < c.Generation:
		out.Pending = "cert-manager has not looked at its latest change yet"
	case ready.Status != cmmeta.ConditionTrue:
		out.Pending = fmt.Sprintf("Ready=%s %s: %s", ready.Status, ready.Reason, ready.Message)
	}
	return out
}

// describe names the Certificate and its state for a condition's message.
func (i *issuance) describe() string {
	if i.Pending == "" {
		return "Certificate " + i.Certificate
	}
	return fmt.Sprintf("Certificate %s (%s)", i.Certificate, i.Pending)
}
