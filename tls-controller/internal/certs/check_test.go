package certs

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// TestCheck runs every check on certificates generated for the case.
func TestCheck(t *testing.T) {
	names := checkedNames("vk", "ns")
	all := []string{"vk.ns.svc", "vk.ns.svc.cluster.local", "*.vk-nodes.ns.svc"}
	ca, other := newTestCA(t, "ca"), newTestCA(t, "other")
	now := time.Now()
	inter := ca.intermediate(t, caOpts{})
	expiredInter := ca.intermediate(t, caOpts{notBefore: now.Add(-48 * time.Hour), notAfter: now.Add(-time.Hour)})
	serverOnlyInter := ca.intermediate(t, caOpts{eku: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})

	valid := func(o leafOpts) map[string][]byte {
		if o.dns == nil {
			o.dns = all
		}
		c, k := ca.issue(t, o)
		return secretData(ca.PEM, c, k)
	}
	viaIntermediate := func(in *testCA, withChain bool, o leafOpts) map[string][]byte {
		o.dns = all
		c, k := in.issue(t, o)
		if withChain {
			c = concat(c, in.PEM)
		}
		return secretData(ca.PEM, c, k)
	}
	withKey := func(d map[string][]byte, key []byte) map[string][]byte { d[KeyKey] = key; return d }
	without := func(d map[string][]byte, keys ...string) map[string][]byte {
		for _, k := range keys {
			delete(d, k)
		}
		return d
	}
	_, strangerKey := ca.issue(t, leafOpts{})
	oldCA, newCA := newTestCA(t, "old"), newTestCA(t, "new")
	bundle := concat(oldCA.PEM, newCA.PEM)
	oldLeaf, oldKey := oldCA.issue(t, leafOpts{dns: all})
	newLeaf, newKey := newCA.issue(t, leafOpts{dns: all})
	encrypted := pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{1, 2, 3}})

	tests := []struct {
		name    string
		data    map[string][]byte
		reason  string // "" when accepted
		msg     string // part of the refusal message
		missing []string
	}{
		{name: "valid ECDSA, PKCS #8", data: valid(leafOpts{})},
		{name: "valid ECDSA, SEC 1", data: valid(leafOpts{keyForm: "sec1"})},
		{name: "valid RSA, PKCS #1", data: valid(leafOpts{rsa: true, keyForm: "pkcs1"})},
		{name: "valid RSA, PKCS #8", data: valid(leafOpts{rsa: true})},
		{name: "no extended key usage allows every usage", data: valid(leafOpts{noEKU: true})},
		{name: "no name covered: a warning", data: valid(leafOpts{dns: []string{"example.com"}}), missing: names},
		{name: "short name only", data: valid(leafOpts{dns: []string{"vk.ns.svc"}}), missing: names[1:]},
		{name: "wildcard of the namespace covers the short name", data: valid(leafOpts{dns: []string{"*.ns.svc", "vk.ns.svc.cluster.local"}})},
		{name: "chain with intermediate in tls.crt", data: viaIntermediate(inter, true, leafOpts{})},
		{name: "CA bundle, certificate of the old CA", data: secretData(bundle, oldLeaf, oldKey)},
		{name: "CA bundle, certificate of the new CA", data: secretData(bundle, newLeaf, newKey)},

		{name: "tls.key missing", data: without(valid(leafOpts{}), KeyKey), reason: v1alpha1.ReasonKeyMissing, msg: "no tls.key"},
		{name: "ca.crt and tls.crt missing", data: without(valid(leafOpts{}), KeyCA, KeyCert), reason: v1alpha1.ReasonKeyMissing, msg: "no ca.crt and tls.crt"},
		{name: "empty tls.crt", data: withKey(valid(leafOpts{}), nil), reason: v1alpha1.ReasonKeyMissing, msg: "tls.key"},
		{name: "tls.crt not PEM", data: func() map[string][]byte { d := valid(leafOpts{}); d[KeyCert] = []byte("junk"); return d }(),
			reason: v1alpha1.ReasonMalformed, msg: "tls.crt: no PEM certificate"},
		{name: "ca.crt not PEM", data: func() map[string][]byte { d := valid(leafOpts{}); d[KeyCA] = []byte("junk"); return d }(),
			reason: v1alpha1.ReasonMalformed, msg: "ca.crt"},
		{name: "encrypted key", data: withKey(valid(leafOpts{}), encrypted), reason: v1alpha1.ReasonMalformed, msg: "encrypted"},
		{name: "key of another certificate", data: withKey(valid(leafOpts{}), strangerKey), reason: v1alpha1.ReasonKeyMismatch, msg: "not the private key"},
		{name: "expired", data: valid(leafOpts{notBefore: now.Add(-48 * time.Hour), notAfter: now.Add(-time.Minute)}),
			reason: v1alpha1.ReasonExpired, msg: "expired on"},
		{name: "not yet valid", data: valid(leafOpts{notBefore: now.Add(time.Hour)}), reason: v1alpha1.ReasonNotYetValid, msg: "valid only from"},
		{name: "expired intermediate", data: viaIntermediate(expiredInter, true, leafOpts{}), reason: v1alpha1.ReasonExpired, msg: "chain"},
		{name: "other CA", data: func() map[string][]byte { d := valid(leafOpts{}); d[KeyCA] = other.PEM; return d }(),
			reason: v1alpha1.ReasonChainInvalid, msg: "does not verify against ca.crt"},
		{name: "intermediate left out of tls.crt", data: viaIntermediate(inter, false, leafOpts{}), reason: v1alpha1.ReasonChainInvalid},
		{name: "new CA alone, certificate of the old CA", data: secretData(newCA.PEM, oldLeaf, oldKey), reason: v1alpha1.ReasonChainInvalid},
		{name: "server authentication only", data: valid(leafOpts{eku: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}),
			reason: v1alpha1.ReasonUsageInvalid, msg: "does not allow client authentication"},
		{name: "client authentication only", data: valid(leafOpts{eku: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}),
			reason: v1alpha1.ReasonUsageInvalid, msg: "does not allow server authentication"},
		{name: "intermediate restricted to server authentication", data: viaIntermediate(serverOnlyInter, true, leafOpts{}),
			reason: v1alpha1.ReasonUsageInvalid, msg: "client authentication"},
		{name: "key usage without digitalSignature", data: valid(leafOpts{ku: x509.KeyUsageKeyEncipherment, rsa: true}),
			reason: v1alpha1.ReasonUsageInvalid, msg: "digitalSignature"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := Check(tc.data, names, now)
			if tc.reason == "" {
				if !v.Accepted() {
					t.Fatalf("refused: %v", v.Refusal)
				}
				if !slices.Equal(v.MissingNames, tc.missing) {
					t.Errorf("missing names %v, want %v", v.MissingNames, tc.missing)
				}
				return
			}
			if v.Refusal == nil {
				t.Fatalf("accepted, want %s", tc.reason)
			}
			if v.Refusal.Reason != tc.reason || !strings.Contains(v.Refusal.Message, tc.msg) {
				t.Errorf("refusal %s: %s, want %s with %q", v.Refusal.Reason, v.Refusal.Message, tc.reason, tc.msg)
			}
			if strings.Contains(v.Refusal.Message, "PRIVATE KEY") {
				t.Errorf("the message shows key material: %s", v.Refusal.Message)
			}
		})
	}
}

// TestFingerprintAndRevision checks the fingerprint format and that the revision
// depends on exactly the three keys' content.
func TestFingerprintAndRevision(t *testing.T) {
	ca := newTestCA(t, "ca")
	c, k := ca.issue(t, leafOpts{})
	d := secretData(ca.PEM, c, k)
	cert, ref := Parse(d)
	if ref != nil {
		t.Fatal(ref)
	}
	sum := sha256.Sum256(cert.Leaf.Raw)
	want := strings.ToUpper(strings.ReplaceAll(fmt.Sprintf("% x", sum[:]), " ", ":"))
	if cert.Fingerprint != want {
		t.Errorf("fingerprint %s, want %s", cert.Fingerprint, want)
	}
	again, _ := Parse(secretData(ca.PEM, c, k))
	if again.Fingerprint != cert.Fingerprint || again.Revision != cert.Revision {
		t.Error("fingerprint or revision differ for the same content")
	}
	if len(cert.Revision) != 16 {
		t.Errorf("revision %q, want 16 hex digits", cert.Revision)
	}
	withExtra := secretData(ca.PEM, c, k)
	withExtra["other"] = []byte("x")
	if Revision(withExtra) != cert.Revision {
		t.Error("a key other than the three changes the revision")
	}
	c2, k2 := ca.issue(t, leafOpts{})
	if Revision(secretData(ca.PEM, c2, k2)) == cert.Revision {
		t.Error("another certificate has the same revision")
	}
	// Moving bytes from one key to the next must change the revision.
	if Revision(map[string][]byte{KeyCA: []byte("ab"), KeyCert: []byte("c")}) == Revision(map[string][]byte{KeyCA: []byte("a"), KeyCert: []byte("bc")}) {
		t.Error("the revision does not separate the keys")
	}
}
