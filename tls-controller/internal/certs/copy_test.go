package certs

import (
	"bytes"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// servedCopy builds the copy as the controller would have written it.
func servedCopy(t *testing.T, data map[string][]byte, annotations map[string]string) *served {
	t.Helper()
	cert, ref := Parse(data)
	if ref != nil {
		t.Fatal(ref)
	}
	a := map[string]string{AnnotationRevision: cert.Revision, AnnotationSource: "s"}
	for k, v := range annotations {
		a[k] = v
	}
	sec := &corev1.Secret{Data: data}
	sec.Annotations = a
	return &served{secret: sec, cert: cert}
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
		if !got.NewRevision || got.Annotations[AnnotationReloadAfter] != "" || got.Data[KeyPreviousCA] != nil {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("same content, renamed Secret", func(t *testing.T) {
		prev := servedCopy(t, first, map[string]string{AnnotationRolledOut: parse(first).Revision})
		got := nextCopy(prev, parse(first), first, "renamed", now, delay)
		if got.NewRevision || got.Annotations[AnnotationSource] != "renamed" || got.Annotations[AnnotationRolledOut] != parse(first).Revision {
			t.Errorf("got %+v", got.Annotations)
		}
		if !copyUpToDate(prev.secret, nextCopy(prev, parse(first), first, "s", now, delay)) {
			t.Error("an unchanged copy is not up to date")
		}
	})
	t.Run("new certificate of the same CA", func(t *testing.T) {
		prev := servedCopy(t, first, map[string]string{AnnotationRolledOut: parse(first).Revision})
		d := secretData(oldCA.PEM, c2, k2)
		got := nextCopy(prev, parse(d), d, "s", now, delay)
		if !got.NewRevision || got.Annotations[AnnotationReloadAfter] != "" || got.Data[KeyPreviousCA] != nil || got.Annotations[AnnotationRolledOut] != "" {
			t.Errorf("got %+v", got.Annotations)
		}
	})
	t.Run("CA bundle, same certificate: reload after the delay", func(t *testing.T) {
		prev := servedCopy(t, first, map[string]string{AnnotationRolledOut: parse(first).Revision})
		d := secretData(bundle, c1, k1)
		got := nextCopy(prev, parse(d), d, "s", now, delay)
		if got.Annotations[AnnotationReloadAfter] != "2030-01-01T00:02:00Z" {
			t.Errorf("reload after %q", got.Annotations[AnnotationReloadAfter])
		}
		if !bytes.Equal(got.Data[KeyPreviousCA], oldCA.PEM) {
			t.Error("the old CA is not kept while the new ca.crt rolls out")
		}
	})
	t.Run("new certificate before the last rollout completed: reload after the delay", func(t *testing.T) {
		prev := servedCopy(t, first, nil)
		d := secretData(oldCA.PEM, c2, k2)
		if got := nextCopy(prev, parse(d), d, "s", now, delay); got.Annotations[AnnotationReloadAfter] == "" {
			t.Error("a member still on an older revision could show this leaf: a timed reload is needed")
		}
	})
	t.Run("CA switch before the last rollout completed keeps every earlier CA", func(t *testing.T) {
		d2 := secretData(bundle, c1, k1)
		prev := servedCopy(t, d2, nil)
		prev.secret.Data[KeyPreviousCA] = []byte("EARLIER")
		d := secretData(newCA.PEM, c3, k3)
		got := nextCopy(prev, parse(d), d, "s", now, delay)
		if !bytes.Equal(got.Data[KeyPreviousCA], concat(bundle, []byte("EARLIER"))) {
			t.Errorf("previous CAs %q", got.Data[KeyPreviousCA])
		}
		if got.Annotations[AnnotationReloadAfter] == "" {
			t.Error("the previous rollout is incomplete: a timed reload is needed")
		}
	})
}
