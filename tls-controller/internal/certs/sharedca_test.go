package certs

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestCAIndex(t *testing.T) {
	var woken []string
	x := newCAIndex(func(k types.NamespacedName) { woken = append(woken, k.String()) })
	a, b, c := types.NamespacedName{Namespace: "t1", Name: "a"}, types.NamespacedName{Namespace: "t1", Name: "b"}, types.NamespacedName{Namespace: "t2", Name: "c"}
	names := func(ks []types.NamespacedName) []string {
		var out []string
		for _, k := range ks {
			out = append(out, k.String())
		}
		return out
	}
	steps := []struct {
		name      string
		do        func() []types.NamespacedName
		others    []string
		wantWoken []string
	}{
		{"a alone", func() []types.NamespacedName { return x.set(a, []string{"X"}) }, nil, nil},
		{"b shares X: a is woken", func() []types.NamespacedName { return x.set(b, []string{"Y", "X", "X"}) }, []string{"t1/a"}, []string{"t1/a"}},
		{"a's pass again wakes nobody", func() []types.NamespacedName { return x.set(a, []string{"X"}) }, []string{"t1/b"}, nil},
		{"c shares Y with b", func() []types.NamespacedName { return x.set(c, []string{"Y"}) }, []string{"t1/b"}, []string{"t1/b"}},
		{"b's pass sees both", func() []types.NamespacedName { return x.set(b, []string{"X", "Y"}) }, []string{"t1/a", "t2/c"}, nil},
		{"b moves to Z: a and c are woken", func() []types.NamespacedName { return x.set(b, []string{"Z"}) }, nil, []string{"t1/a", "t2/c"}},
		{"a is forgotten: nobody shared X", func() []types.NamespacedName { x.forget(a); return nil }, nil, nil},
		{"c trusts Z too, then is forgotten: b is woken twice", func() []types.NamespacedName {
			x.set(c, []string{"Z"})
			x.forget(c)
			return nil
		}, nil, []string{"t1/b", "t1/b"}},
	}
	for _, s := range steps {
		woken = nil
		got := names(s.do())
		if !slices.Equal(got, s.others) {
			t.Errorf("%s: others %v, want %v", s.name, got, s.others)
		}
		if !slices.Equal(woken, s.wantWoken) {
			t.Errorf("%s: woken %v, want %v", s.name, woken, s.wantWoken)
		}
	}
	if len(x.byCA) != 1 || len(x.byCluster) != 1 {
		t.Errorf("index holds %v and %v, want only b's Z", x.byCluster, x.byCA)
	}
}

func TestSharedCAWarning(t *testing.T) {
	if w := sharedCAWarning("t1", nil); w != "" {
		t.Errorf("no other cluster: %q", w)
	}
	w := sharedCAWarning("t1", []types.NamespacedName{{Namespace: "t1", Name: "a"}, {Namespace: "t1", Name: "b"}, {Namespace: "t2", Name: "secret-name"}, {Namespace: "t3", Name: "c"}})
	for _, want := range []string{"ValkeyCluster a and b of this namespace", "2 ValkeyCluster(s) of other namespaces", "spec.tls.certManager without issuerRef"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
	if strings.Contains(w, "secret-name") || strings.Contains(w, "t2") {
		t.Errorf("warning %q names a cluster or namespace of another tenant", w)
	}
}

func TestSharedCAWarningNamesFew(t *testing.T) {
	var others []types.NamespacedName
	for i := range 500 {
		others = append(others, types.NamespacedName{Namespace: "t1", Name: fmt.Sprintf("cluster-%03d-with-a-long-name-to-fill-the-message", i)})
	}
	w := sharedCAWarning("t1", others)
	if !strings.Contains(w, "cluster-004-with-a-long-name-to-fill-the-message and 495 more of this namespace") {
		t.Errorf("warning %q does not name five and count the rest", w)
	}
	if len(w) > 1024 {
		t.Errorf("warning of %d bytes for 500 clusters", len(w))
	}
}
