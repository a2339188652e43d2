package memberpod

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	psa "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// Level is the Pod Security Standard every member's pod meets: restricted, at the latest
// version the library knows.
var Level = psa.LevelVersion{Level: psa.LevelRestricted, Version: psa.LatestVersion()}

// LevelName is Level as a namespace's pod-security.kubernetes.io/enforce labels name it
// and as the API server's refusals quote it.
const LevelName = "restricted:latest"

// Violation is one way a pod breaks Level.
type Violation struct {
	// Check is the library's ID of the broken check (privileged, hostPorts, ...).
	Check string
	// Reason and Detail are the library's words (Detail may be empty).
	Reason, Detail string
	// Container is the container the violation is in; empty when it is in the pod's
	// own fields.
	Container string
	// Field is what the user wrote that causes it: a field of a spec.containers entry,
	// which alone breaks the check, or the whole entry of a sidecar when no single field
	// does. Nil when the cause is what the operator renders.
	Field *field.Path
}

// Message says what the violation is, as the API server's own Pod Security admission
// would.
func (v Violation) Message() string {
	if v.Detail == "" {
		return fmt.Sprintf("violates PodSecurity %q: %s", LevelName, v.Reason)
	}
	return fmt.Sprintf("violates PodSecurity %q: %s (%s)", LevelName, v.Reason, v.Detail)
}

// oneCheck is one of the library's checks at Level.
type oneCheck struct {
	id policy.CheckID
	fn policy.CheckPodFn
}

// library is the library's evaluator and, one by one, the checks it runs at Level.
var library = sync.OnceValues(func() (libraryChecks, error) {
	all := policy.DefaultChecks()
	e, err := policy.NewEvaluator(all, nil)
	if err != nil {
		return libraryChecks{}, fmt.Errorf("load the Pod Security checks: %w", err)
	}
	return libraryChecks{evaluator: e, checks: checksAtLevel(all)}, nil
})

type libraryChecks struct {
	evaluator policy.Evaluator
	checks    []oneCheck
}

// checksAtLevel picks what the library's evaluator runs for restricted at the latest
// version: each check's newest version, except the baseline checks a restricted one
// overrides; baseline first, each level by ID (the evaluator's order).
func checksAtLevel(all []policy.Check) []oneCheck {
	overridden := map[policy.CheckID]bool{}
	for _, c := range all {
		if c.Level == psa.LevelRestricted && len(c.Versions) > 0 {
			for _, id := range c.Versions[len(c.Versions)-1].OverrideCheckIDs {
				overridden[id] = true
			}
		}
	}
	var baseline, restricted []oneCheck
	for _, c := range all {
		if len(c.Versions) == 0 {
			continue
		}
		oc := oneCheck{id: c.ID, fn: c.Versions[len(c.Versions)-1].CheckPod}
		switch {
		case c.Level == psa.LevelRestricted:
			restricted = append(restricted, oc)
		case c.Level == psa.LevelBaseline && !overridden[c.ID]:
			baseline = append(baseline, oc)
		}
	}
	byID := func(a, b oneCheck) int { return cmpString(string(a.id), string(b.id)) }
	slices.SortFunc(baseline, byID)
	slices.SortFunc(restricted, byID)
	return append(baseline, restricted...)
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Check evaluates a member's pod (its metadata may be nil) at Level with the Pod
// Security library, and returns every violation. patches are the spec.containers entries
// as the user wrote them, at path p: a violation in a container an entry patched or
// added names the entry's field that causes it (Violation.Field).
func Check(meta *metav1.ObjectMeta, spec *corev1.PodSpec, patches []corev1.Container, p *field.Path) []Violation {
	lib, err := library()
	if err != nil {
		return []Violation{{Reason: err.Error()}}
	}
	if meta == nil {
		meta = &metav1.ObjectMeta{}
	}
	agg := policy.AggregateCheckResults(lib.evaluator.EvaluatePod(Level, meta, spec))
	if agg.Allowed {
		return nil
	}
	out := attribute(lib.checks, meta, spec, patches, p)
	if len(out) == 0 {
		// The library refused what no single container or pod field explains.
		out = append(out, Violation{Reason: agg.ForbiddenReason(), Detail: agg.ForbiddenDetail()})
	}
	return out
}

// attribute runs each check on the pod's own fields alone, then on each container alone
// in the pod, and blames the user's fields for what a container breaks.
func attribute(checks []oneCheck, meta *metav1.ObjectMeta, spec *corev1.PodSpec, patches []corev1.Container, p *field.Path) []Violation {
	bare := *spec
	bare.Containers, bare.InitContainers, bare.EphemeralContainers = nil, nil, nil
	var out []Violation
	podLevel := map[policy.CheckID]bool{}
	for _, c := range checks {
		if r := c.fn(meta, &bare); !r.Allowed {
			podLevel[c.id] = true
			out = append(out, Violation{Check: string(c.id), Reason: r.ForbiddenReason, Detail: r.ForbiddenDetail})
		}
	}
	type placed struct {
		c    corev1.Container
		init bool
	}
	var all []placed
	for _, c := range spec.InitContainers {
		all = append(all, placed{c, true})
	}
	for _, c := range spec.Containers {
		all = append(all, placed{c, false})
	}
	for _, pc := range all {
		alone := withContainer(bare, pc.c, pc.init)
		// The user's entry for the container, if any, and its parts (read once).
		var entry *field.Path
		var parts []node
		i := slices.IndexFunc(patches, func(e corev1.Container) bool { return e.Name == pc.c.Name })
		if i >= 0 {
			entry = p.Index(i)
		}
		for _, c := range checks {
			if podLevel[c.id] {
				continue
			}
			if r := c.fn(meta, &alone); !r.Allowed {
				v := Violation{Check: string(c.id), Reason: r.ForbiddenReason, Detail: r.ForbiddenDetail, Container: pc.c.Name}
				if entry == nil {
					out = append(out, v)
					continue
				}
				if parts == nil {
					parts = topLevel(patches[i])
				}
				out = append(out, blame(c, meta, bare, pc.init, v, entry, parts)...)
			}
		}
	}
	return out
}

// withContainer is the pod with c as its only container (or init container). The
// library's checks only read, so the pod shares everything with bare and c.
func withContainer(bare corev1.PodSpec, c corev1.Container, init bool) corev1.PodSpec {
	pod := bare
	if init {
		pod.InitContainers = []corev1.Container{c}
	} else {
		pod.Containers = []corev1.Container{c}
	}
	return pod
}

// blame finds what in the user's entry for v's container breaks check c: a part of the
// entry (a field, an element of a list, or a single value) is put alone into a
// container of that name (a sidecar restricted as PatchContainers does) and checked in
// the pod; the search goes down only into parts that break the check alone, and blames
// the smallest such parts, so its cost follows what is wrong, not the entry's size. A
// sidecar with no such part is blamed whole; the operator's own containers are the
// operator's.
func blame(c oneCheck, meta *metav1.ObjectMeta, bare corev1.PodSpec, init bool, v Violation,
	entry *field.Path, parts []node) []Violation {
	fails := func(n node) (string, bool) {
		iso, ok := n.container(v.Container)
		if !ok {
			return "", false
		}
		if IsSidecar(v.Container) {
			RestrictSidecar(&iso)
		}
		pod := withContainer(bare, iso, init)
		r := c.fn(meta, &pod)
		return r.ForbiddenDetail, !r.Allowed
	}
	var out []Violation
	for _, n := range parts {
		for _, found := range search(n, fails) {
			fv := v
			fv.Detail, fv.Field = found.detail, found.node.path(entry)
			out = append(out, fv)
		}
	}
	if len(out) == 0 {
		if IsSidecar(v.Container) {
			v.Field = entry
		}
		out = append(out, v)
	}
	return out
}

// found is a part of an entry that breaks a check alone, with the library's detail.
type found struct {
	node   node
	detail string
}

// search returns the smallest parts under n that break the check alone, or n itself
// when it does and none of its parts does; nothing when n does not.
func search(n node, fails func(node) (string, bool)) []found {
	detail, bad := fails(n)
	if !bad {
		return nil
	}
	var out []found
	for _, child := range n.children() {
		out = append(out, search(child, fails)...)
	}
	if len(out) == 0 {
		out = append(out, found{node: n, detail: detail})
	}
	return out
}

// node is a part of a container entry: the value at the keys and indexes (steps) of
// the entry's JSON.
type node struct {
	steps []any // string: a key; int: an index
	value any
}

// topLevel is every field an entry sets but its name, in the JSON's key order.
func topLevel(c corev1.Container) []node {
	b, err := json.Marshal(c)
	if err != nil {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil
	}
	delete(m, "name")
	return node{value: m}.children()
}

// children are the fields of an object or the elements of a list.
func (n node) children() []node {
	var out []node
	switch x := n.value.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			out = append(out, node{steps: append(slices.Clone(n.steps), k), value: x[k]})
		}
	case []any:
		for j, e := range x {
			out = append(out, node{steps: append(slices.Clone(n.steps), j), value: e})
		}
	}
	return out
}

// container is a container named name that sets only this part (a list element becomes
// the only element of its list).
func (n node) container(name string) (corev1.Container, bool) {
	var nest func(steps []any) any
	nest = func(steps []any) any {
		if len(steps) == 0 {
			return n.value
		}
		if k, ok := steps[0].(string); ok {
			return map[string]any{k: nest(steps[1:])}
		}
		return []any{nest(steps[1:])}
	}
	m, ok := nest(n.steps).(map[string]any)
	if !ok {
		return corev1.Container{}, false
	}
	m["name"] = name
	b, err := json.Marshal(m)
	if err != nil {
		return corev1.Container{}, false
	}
	var c corev1.Container
	if err := json.Unmarshal(b, &c); err != nil {
		return corev1.Container{}, false
	}
	return c, true
}

// path is the part's field path under the entry's.
func (n node) path(entry *field.Path) *field.Path {
	p := entry
	for _, s := range n.steps {
		switch s := s.(type) {
		case string:
			p = p.Child(s)
		case int:
			p = p.Index(s)
		}
	}
	return p
}
