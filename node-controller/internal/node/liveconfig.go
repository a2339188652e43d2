package node

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkeyconf"
)

// configDiff is how the spec's config differs from the config the ConfigMap was
// rendered from (what the server runs), split by what each difference needs.
type configDiff struct {
	// Set are the live keys whose spec value the server does not have yet: applied
	// with CONFIG SET, then written into the ConfigMap.
	Set map[string]string
	// Removed are live keys the spec no longer sets, with the value the server would run
	// with after a restart (valkeyconf.UnsetValue): set with CONFIG SET, then dropped
	// from the ConfigMap.
	Removed map[string]string
	// Restart are the other keys added, changed or removed: they wait for a new pod.
	Restart []string
}

// empty reports whether the ConfigMap needs no live change.
func (d configDiff) liveEmpty() bool { return len(d.Set) == 0 && len(d.Removed) == 0 }

// diffConfig compares applied with desired (both normalised) for a server of version v.
func diffConfig(applied, desired map[string]string, v valkey.Version) configDiff {
	d := configDiff{Set: map[string]string{}, Removed: map[string]string{}}
	for k, want := range desired {
		have, ok := applied[k]
		switch {
		case ok && have == want:
		case valkeyconf.Live(k, v):
			d.Set[k] = want
		default:
			d.Restart = append(d.Restart, k)
		}
	}
	for k := range applied {
		if _, ok := desired[k]; ok {
			continue
		}
		if unset, ok := valkeyconf.UnsetValue(k, v); ok {
			d.Removed[k] = unset
		} else {
			d.Restart = append(d.Restart, k)
		}
	}
	slices.Sort(d.Restart)
	return d
}

// applyLive returns applied with the live part of d taken.
func (d configDiff) applyLive(applied map[string]string) map[string]string {
	out := maps.Clone(applied)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, d.Set)
	for k := range d.Removed {
		delete(out, k)
	}
	return out
}

// nextConfig is the config a new pod starts with: the spec's, except after the
// running server refused the spec's live values; then a live key keeps the value the
// server last accepted (or is left out), so a refused value never reaches a pod
// through the ConfigMap.
func nextConfig(desired, applied map[string]string, refused bool, v valkey.Version) map[string]string {
	if !refused {
		return maps.Clone(desired)
	}
	live, static := splitConfig(desired, v)
	for k := range live {
		if have, ok := applied[k]; ok {
			static[k] = have
		}
	}
	return static
}

// liveVersion is the version whose live keys may be set on the running server: the
// server's own (from this pass's INFO, else the one it reported before), the oldest
// supported when it is unknown.
func liveVersion(vn *v1alpha1.ValkeyNode, server valkey.Version) valkey.Version {
	return valkeyconf.MemberVersion(server, vn.Status.Version)
}

// refusedBefore reports whether the server already refused the live values of this
// generation of the spec: they are not sent again until the spec changes.
func refusedBefore(vn *v1alpha1.ValkeyNode) bool {
	c := conditions.Get(vn.Status.Conditions, v1alpha1.ConditionConfigApplied)
	return c != nil && c.Reason == v1alpha1.ReasonConfigRefused && c.ObservedGeneration == vn.Generation
}

// reconcileLiveConfig applies the live part of the spec's config to the running
// server, then records it in the ConfigMap. Only values the server took are written.
func (r *Reconciler) reconcileLiveConfig(ctx context.Context, s *scope) error {
	if s.applied == nil {
		s.configCond = configAppliedCond(s.node)
		return nil
	}
	d := diffConfig(s.applied, s.desiredConfig, liveVersion(s.node, s.serverVersion))
	if d.liveEmpty() {
		s.configCond = configAppliedCond(s.node)
		return nil
	}
	if done, err := r.setLive(ctx, s, d); done || err != nil {
		return err
	}
	if _, err := r.writeConfigMap(ctx, s, d.applyLive(s.applied)); err != nil {
		return err
	}
	r.event(s, s.configMap, corev1.EventTypeNormal, "ConfigApplied", "ApplyConfig", liveNote(d))
	s.configCond = configAppliedCond(s.node)
	return nil
}

// setLive sends the live values, and the unset values of the removed keys, with one
// CONFIG SET (the server takes all or none). done is true when the pass must not record
// them: no server, or a refusal.
func (r *Reconciler) setLive(ctx context.Context, s *scope, d configDiff) (done bool, err error) {
	values := maps.Clone(d.Set)
	maps.Copy(values, d.Removed)
	keys := slices.Sorted(maps.Keys(values))
	gen := s.node.Generation
	switch {
	case s.server == nil && s.serverErr == nil:
		s.configCond = conditions.New(v1alpha1.ConditionConfigApplied, false, v1alpha1.ReasonWaiting,
			fmt.Sprintf("%s wait for the server to run", strings.Join(keys, ", ")), gen)
		return true, nil
	case s.server == nil:
		s.configCond = conditions.New(v1alpha1.ConditionConfigApplied, false, v1alpha1.ReasonServerUnreachable,
			fmt.Sprintf("%s wait for the server: %v", strings.Join(keys, ", "), s.serverErr), gen)
		return true, nil
	case refusedBefore(s.node):
		s.configCond = *conditions.Get(s.node.Status.Conditions, v1alpha1.ConditionConfigApplied)
		return true, nil
	}
	ctx, cancel := serverContext(ctx)
	defer cancel()
	err = s.server.ConfigSet(ctx, values)
	if msg, refused := valkey.ServerMessage(err); refused {
		s.configCond = conditions.New(v1alpha1.ConditionConfigApplied, false, v1alpha1.ReasonConfigRefused,
			fmt.Sprintf("the server refused %s: %s", strings.Join(keys, ", "), msg), gen)
		r.event(s, s.configMap, corev1.EventTypeWarning, "ConfigRefused", "ApplyConfig",
			fmt.Sprintf("the server refused %s: %s", strings.Join(keys, ", "), msg))
		return true, nil
	}
	if err != nil {
		s.configCond = conditions.New(v1alpha1.ConditionConfigApplied, false, v1alpha1.ReasonServerUnreachable,
			fmt.Sprintf("%s could not be sent: %v", strings.Join(keys, ", "), err), gen)
		return true, fmt.Errorf("apply live config: %w", err)
	}
	return false, nil
}

// liveNote describes a live change for an event (key names only).
func liveNote(d configDiff) string {
	var parts []string
	if len(d.Set) > 0 {
		parts = append(parts, "set "+strings.Join(slices.Sorted(maps.Keys(d.Set)), ", ")+" with CONFIG SET")
	}
	if len(d.Removed) > 0 {
		parts = append(parts, "reset "+strings.Join(slices.Sorted(maps.Keys(d.Removed)), ", ")+
			" to the values a restart would give them, as the spec no longer sets them")
	}
	return strings.Join(parts, "; ")
}

// configAppliedCond is ConfigApplied when the live settings are in effect.
func configAppliedCond(vn *v1alpha1.ValkeyNode) metav1.Condition {
	return conditions.New(v1alpha1.ConditionConfigApplied, true, v1alpha1.ReasonConfigApplied,
		"the live settings of the spec are in effect", vn.Generation)
}
