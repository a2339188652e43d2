package certs

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/valkey-operator/valkey-operator/internal/watches"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// caIndex knows, of every cluster whose members serve an accepted certificate, the CAs
// they trust (the fingerprints of ca.crt's certificates): a member of one cluster may
// join the bus of every other cluster that trusts its CA. It lives in the leader's
// memory only; every cluster's first pass after a start fills it again.
type caIndex struct {
	mu        sync.Mutex
	byCluster map[types.NamespacedName][]string
	byCA      map[string]map[types.NamespacedName]bool
	// wake asks for a pass of a cluster whose sharing changed.
	wake func(types.NamespacedName)
}

func newCAIndex(wake func(types.NamespacedName)) *caIndex {
	return &caIndex{byCluster: map[types.NamespacedName][]string{}, byCA: map[string]map[types.NamespacedName]bool{}, wake: wake}
}

// set records that key's members trust the CAs cas and returns the other clusters that
// trust one of them. When what key trusts changed, the clusters that share a CA it
// trusted before or trusts now are woken, so that their warning follows; an unchanged
// set wakes nobody (two clusters' passes never wake each other in turn).
func (x *caIndex) set(key types.NamespacedName, cas []string) []types.NamespacedName {
	cas = slices.Compact(slices.Sorted(slices.Values(cas)))
	x.mu.Lock()
	before := x.byCluster[key]
	changed := !slices.Equal(before, cas)
	if changed {
		x.removeLocked(key)
		x.byCluster[key] = cas
		for _, ca := range cas {
			if x.byCA[ca] == nil {
				x.byCA[ca] = map[types.NamespacedName]bool{}
			}
			x.byCA[ca][key] = true
		}
	}
	others := x.sharersLocked(key, cas)
	var woken []types.NamespacedName
	if changed {
		woken = x.sharersLocked(key, before, cas)
	}
	x.mu.Unlock()
	for _, o := range woken {
		x.wake(o)
	}
	return others
}

// forget drops key (its cluster is gone or has no TLS any more) and wakes the clusters
// that shared a CA with it.
func (x *caIndex) forget(key types.NamespacedName) {
	x.mu.Lock()
	woken := x.sharersLocked(key, x.byCluster[key])
	x.removeLocked(key)
	x.mu.Unlock()
	for _, o := range woken {
		x.wake(o)
	}
}

// sharersLocked are the clusters other than key that trust a CA of one of the lists,
// each once, sorted by namespace and name.
func (x *caIndex) sharersLocked(key types.NamespacedName, lists ...[]string) []types.NamespacedName {
	seen := map[types.NamespacedName]bool{key: true}
	var out []types.NamespacedName
	for _, cas := range lists {
		for _, ca := range cas {
			for o := range x.byCA[ca] {
				if !seen[o] {
					seen[o] = true
					out = append(out, o)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b types.NamespacedName) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out
}

func (x *caIndex) removeLocked(key types.NamespacedName) {
	for _, ca := range x.byCluster[key] {
		delete(x.byCA[ca], key)
		if len(x.byCA[ca]) == 0 {
			delete(x.byCA, ca)
		}
	}
	delete(x.byCluster, key)
}

// caFingerprints are the fingerprints of the CAs a certificate's members trust.
func caFingerprints(c *Certificate) []string {
	out := make([]string, 0, len(c.Roots))
	for _, r := range c.Roots {
		out = append(out, valkey.Fingerprint(r))
	}
	return out
}

// maxNamedSharers is how many clusters of its namespace a warning names; the others are
// counted, so the condition's message stays short whatever a namespace holds.
const maxNamedSharers = 5

// sharedCAWarning says that the members of the cluster in namespace ns trust a CA that
// the clusters others trust too ("" when others is empty). Clusters of ns are named;
// those of other namespaces only counted, so one tenant's warning does not list
// another's clusters.
func sharedCAWarning(ns string, others []types.NamespacedName) string {
	if len(others) == 0 {
		return ""
	}
	var here []string
	elsewhere := 0
	for _, o := range others {
		if o.Namespace == ns {
			here = append(here, o.Name)
		} else {
			elsewhere++
		}
	}
	var who []string
	if len(here) > maxNamedSharers {
		here = append(here[:maxNamedSharers:maxNamedSharers], fmt.Sprintf("%d more", len(here)-maxNamedSharers))
	}
	if len(here) > 0 {
		who = append(who, "ValkeyCluster "+joinWords(here)+" of this namespace")
	}
	if elsewhere > 0 {
		who = append(who, fmt.Sprintf("%d ValkeyCluster(s) of other namespaces", elsewhere))
	}
	return fmt.Sprintf("warning: its CA is also trusted by %s, so a member certificate of those clusters "+
		"may join this cluster's bus and replicate its data; give the cluster a CA of its own "+
		"(spec.tls.certManager without issuerRef)", strings.Join(who, " and "))
}

// wakeRequest enqueues a pass of a cluster through src.
func wakeRequest(src *lazySource) func(types.NamespacedName) {
	return func(k types.NamespacedName) { src.add(watches.Request(k.Namespace, k.Name)) }
}
