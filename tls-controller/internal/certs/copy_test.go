package certs

import (
	"bytes"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// servedCopy builds the copy as the controller would have written it, with its rollout
// complete or not.
func servedCopy(t *testing.T, data map[string][]byte, rolledOut bool) *served {
	t.Helper()
	cert, ref := Parse(data)
	if ref != nil {
		t.Fatal(ref)
	}
	return &served{secret: &corev1.Secret{Data: data}, cert: cert, rev: cert.Revision, source: "s", rolled: rolledOut}
}

// TestNextCopy checks what the copy holds for each kind of change.
func TestNextCopy(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	delay := 2 * time.Minute
	oldCA, newCA := newTestCA(t, "old"), newTestCA(t, "new")
	c1, k1 := oldCA.issue(t, leafOpts{})
	c2, k2 := oldCA.issue(t, leafOpts{})
	c3, k3 := newCA.issue(t, leafOpts{})
	bundle := concat(oldCA.PEM, newCA.PEM)
	parse := func(d map[string][]byte) *Certificate {
		c, ref := Parse(d)
		if ref != nil {
			t.Fatal(ref)
		}
		return c
	}
	first := secretData(oldCA.PEM, c1, k1)

	t.Run("first copy", func(t *testing.T) {
		got := nextCopy(nil, parse(first), first, "s", now, delay)
		if !got.NewRevision || !got.ReloadAfter.IsZero() || got.RolledOut || got.Data[KeyPreviousCA] != nil {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("same content, renamed Secret", func(t *testing.T) {
		prev := servedCopy(t, first, true)
		got := nextCopy(prev, parse(first), first, "renamed", now, delay)
		if got.NewRevision || got.Source != "renamed" || !got.RolledOut {
			t.Errorf("got %+v", got)
		}
		if !copyUpToDate(prev.secret, nextCopy(prev, parse(first), first, "s", now, delay)) {
			t.Error("an unchanged copy is not up to date")
		}
	})
	t.Run("new certificate of the same CA", func(t *testing.T) {
		prev := servedCopy(t, first, true)
		d := secretData(oldCA.PEM, c2, k2)
		got := nextCopy(prev, parse(d), d, "s", now, delay)
		if !got.NewRevision || !got.ReloadAfter.IsZero() || got.Data[KeyPreviousCA] != nil || got.RolledOut {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("CA bundle, same certificate: reload after the delay", func(t *testing.T) {
		prev := servedCopy(t, first, true)
		d := secretData(bundle, c1, k1)
		got := nextCopy(prev, parse(d), d, "s", now, delay)
		if !got.ReloadAfter.Equal(now.Add(delay)) {
			t.Errorf("reload after %v", got.ReloadAfter)
		}
		if !bytes.Equal(got.Data[KeyPreviousCA], oldCA.PEM) {
			t.Error("the old CA is not kept while the new ca.crt rolls out")
		}
	})
	t.Run("new certificate before the last rollout completed: reload after the delay", func(t *testing.T) {
		prev := servedCopy(t, first, false)
		d := secretData(oldCA.PEM, c2, k2)
		if got := nextCopy(prev, parse(d), d, "s", now, delay); got.ReloadAfter.IsZero() {
			t.Error("a member still on an older revision could show this leaf: a timed reload is needed")
		}
	})
	t.Run("CA switch before the last rollout completed keeps every earlier CA", func(t *testing.T) {
		d2 := secretData(bundle, c1, k1)
		prev := servedCopy(t, d2, false)
		prev.secret.Data[KeyPreviousCA] = []byte("EARLIER")
		d := secretData(newCA.PEM, c3, k3)
		got := nextCopy(prev, parse(d), d, "s", now, delay)
		if !bytes.Equal(got.Data[KeyPreviousCA], concat(bundle, []byte("EARLIER"))) {
			t.Errorf("previous CAs %q", got.Data[KeyPreviousCA])
		}
		if got.ReloadAfter.IsZero() {
			t.Error("the previous rollout is incomplete: a timed reload is needed")
		}
	})
}

// TestRolloutState: the rollout's state is read from status.tls when it describes the
// copy's revision, else from the legacy annotations of an earlier version when they do;
// neither describes a copy of another revision.
func TestRolloutState(t *testing.T) {
	ca := newTestCA(t, "ca")
	c, k := ca.issue(t, leafOpts{})
	data := secretData(ca.PEM, c, k)
	rev := Revision(data)
	reload := metav1.NewTime(time.Date(2030, 1, 1, 0, 2, 0, 0, time.UTC))
	copyWith := func(annotations map[string]string) *served {
		return &served{secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}, Data: data}, rev: rev}
	}
	cases := []struct {
		name        string
		status      *v1alpha1.TLSStatus
		annotations map[string]string
		known       bool
		want        served
	}{
		{name: "status of the revision, rolling out", status: &v1alpha1.TLSStatus{SecretName: "certs", Revision: rev,
			Rollout: &v1alpha1.TLSRolloutStatus{Phase: v1alpha1.TLSRollingOut, ReloadAfter: &reload}},
			known: true, want: served{source: "certs", reloadAfter: reload.Time}},
		{name: "status of the revision, rolled out", status: &v1alpha1.TLSStatus{SecretName: "certs", Revision: rev,
			Rollout: &v1alpha1.TLSRolloutStatus{Phase: v1alpha1.TLSRolledOut}}, known: true, want: served{source: "certs", rolled: true}},
		{name: "status of another revision", status: &v1alpha1.TLSStatus{SecretName: "certs", Revision: "0123456789abcdef",
			Rollout: &v1alpha1.TLSRolloutStatus{Phase: v1alpha1.TLSRolledOut}}},
		{name: "an earlier version: annotations of the revision", status: &v1alpha1.TLSStatus{SecretName: "certs", Revision: rev},
			annotations: map[string]string{legacySource: "old-certs", legacyRevision: rev, legacyReloadAfter: "2030-01-01T00:02:00Z"},
			known:       true, want: served{source: "old-certs", reloadAfter: reload.Time}},
		{name: "an earlier version, rolled out", annotations: map[string]string{legacySource: "old-certs", legacyRevision: rev, legacyRolledOut: rev},
			known: true, want: served{source: "old-certs", rolled: true}},
		{name: "annotations of another revision", annotations: map[string]string{legacySource: "old-certs", legacyRevision: "0123456789abcdef"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := copyWith(tc.annotations)
			known := rolloutFrom(tc.status, out) || legacyRolloutFrom(out)
			if known != tc.known || out.source != tc.want.source || out.rolled != tc.want.rolled || !out.reloadAfter.Equal(tc.want.reloadAfter) {
				t.Errorf("known %v, source %q, rolled %v, reload after %v; want %v %+v", known, out.source, out.rolled, out.reloadAfter, tc.known, tc.want)
			}
		})
	}
	if !hasLegacyAnnotations(copyWith(map[string]string{legacyRolledOut: rev}).secret) || hasLegacyAnnotations(copyWith(map[string]string{"other": "x"}).secret) {
		t.Error("legacy annotations misread")
	}
}

// TestRolloutStatus: status.tls.rollout of a copy.
func TestRolloutStatus(t *testing.T) {
	at := time.Date(2030, 1, 1, 0, 2, 0, 0, time.UTC)
	s := &served{secret: &corev1.Secret{}, rev: "r1", reloadAfter: at}
	if got := s.rollout(); got.Phase != v1alpha1.TLSRollingOut || got.ReloadAfter == nil || !got.ReloadAfter.Time.Equal(at) {
		t.Errorf("rolling out: %+v", got)
	}
	s.rolled, s.reloadAfter = true, time.Time{}
	if got := s.rollout(); got.Phase != v1alpha1.TLSRolledOut || got.ReloadAfter != nil {
		t.Errorf("rolled out: %+v", got)
	}
}
