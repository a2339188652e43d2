package cluster

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkeyconf"
)

// specDiff says how a member's spec differs from what the cluster asks now.
type specDiff struct {
	// live: only keys the server takes with CONFIG SET, or a volume that grows.
	live bool
	// roll: anything that needs a new pod.
	roll bool
	// fields names what differs, for messages.
	fields []string
}

// diffSpec compares a member's spec with the desired one for its server version.
func diffSpec(have, want v1alpha1.ValkeyNodeSpec, v valkey.Version) specDiff {
	var d specDiff
	if !configEqual(have.Config, want.Config) {
		if onlyLiveKeysDiffer(have.Config, want.Config, v) {
			d.live = true
		} else {
			d.roll = true
		}
		d.fields = append(d.fields, "config")
	}
	if have.Persistence != nil && want.Persistence != nil && have.Persistence.Size.Cmp(want.Persistence.Size) != 0 {
		d.live = true
		d.fields = append(d.fields, "persistence.size")
	}
	if have.Persistence != nil && want.Persistence != nil &&
		have.Persistence.ReclaimPolicyOrDefault() != want.Persistence.ReclaimPolicyOrDefault() {
		d.live = true
		d.fields = append(d.fields, "persistence.reclaimPolicy")
	}
	// Everything else shapes the pod.
	for _, f := range podShapingFields {
		if !reflect.DeepEqual(specField(have, f.path), specField(want, f.path)) {
			d.roll = true
			d.fields = append(d.fields, f.name)
		}
	}
	if restartRequested(have.RestartedAt, want.RestartedAt) {
		d.roll = true
		d.fields = append(d.fields, "RestartedAt")
	}
	return d
}

// restartRequested reports whether a restart requested at want is later than the one
// the member's pod was built for (have): an older or removed request rolls nothing.
func restartRequested(have, want string) bool {
	w, err := time.Parse(time.RFC3339, want)
	if err != nil {
		return false
	}
	h, err := time.Parse(time.RFC3339, have)
	return err != nil || w.After(h)
}

// restartedAt is the latest restart the cluster's annotations request for shard sh
// (valkey.io/restarted-at for every shard, valkey.io/restarted-at-shard-N for one), in
// RFC 3339, or "" for none; a value that is no RFC 3339 time is ignored.
func restartedAt(annotations map[string]string, sh int32) string {
	var latest time.Time
	for _, key := range []string{v1alpha1.AnnotationRestartedAt, v1alpha1.AnnotationRestartedAtShard(sh)} {
		if t, err := time.Parse(time.RFC3339, annotations[key]); err == nil && t.After(latest) {
			latest = t
		}
	}
	if latest.IsZero() {
		return ""
	}
	return latest.UTC().Format(time.RFC3339)
}

// podShapingFields are the ValkeyNodeSpec fields whose change needs a new pod, by path (a
// field of a field as "Persistence.StorageClassName"), with the names messages give them,
// in the order messages list them. The other fields are live (Config's live keys and
// Persistence.Size, compared above) or not compared; TestNodeSpecFieldsClassified fails on
// a field of the spec that is in none of these.
var podShapingFields = []struct{ path, name string }{
	{"Image", "Image"}, {"TLSSecretName", "TLSSecretName"}, {"ACLSecretName", "ACLSecretName"},
	{"SystemUsersSecretName", "SystemUsersSecretName"}, {"WorkloadType", "WorkloadType"},
	{"Resources", "Resources"}, {"ImagePullSecrets", "ImagePullSecrets"}, {"Containers", "Containers"},
	{"Scheduling", "Scheduling"}, {"Exporter", "Exporter"},
	{"TerminationGracePeriodSeconds", "GracePeriod"}, {"Persistence.StorageClassName", "StorageClass"},
}

// specField returns the spec's field at path, normalized; nil when a pointer on the way is
// nil.
func specField(s v1alpha1.ValkeyNodeSpec, path string) any {
	v := reflect.ValueOf(s)
	for _, name := range strings.Split(path, ".") {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return nil
			}
			v = v.Elem()
		}
		v = v.FieldByName(name)
	}
	return normalize(v.Interface())
}

// normalize turns a value into its JSON form so that nil and empty compare equal.
func normalize(v any) any { return jsonString(v) }

// configEqual compares two configs as the server reads them (keys in any spelling), so
// a member written before keys were normalised is not rolled for its spelling.
func configEqual(a, b map[string]string) bool {
	a, b = valkeyconf.Normalized(a), valkeyconf.Normalized(b)
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func onlyLiveKeysDiffer(a, b map[string]string, v valkey.Version) bool {
	for _, k := range changedKeys(a, b) {
		if !valkeyconf.Live(k, v) {
			return false
		}
	}
	return true
}

func changedKeys(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// reconcileLiveConfig hands live changes to the members without a roll: config keys the
// server takes with CONFIG SET (the node-controller applies them and reports
// ConfigApplied) and a volume size that grows.
func (r *Reconciler) reconcileLiveConfig(ctx context.Context, s *scope) (time.Duration, error) {
	var updated []string
	for _, m := range s.topo.Members {
		if m.Leaving() {
			continue
		}
		want := desiredSpec(s.vc, m.Shard())
		d := diffSpec(m.Node.Spec, want, m.LiveVersion())
		if !d.live || d.roll {
			continue
		}
		patch := client.MergeFrom(m.Node.DeepCopy())
		m.Node.Spec.Config = want.Config
		m.Node.Spec.Persistence = want.Persistence
		if err := r.Patch(ctx, m.Node, patch); err != nil {
			return 0, fmt.Errorf("update live settings of %s: %w", m.Name(), err)
		}
		updated = append(updated, m.Name())
	}
	if len(updated) > 0 {
		r.event(s.vc, nil, eventNormal, "LiveConfigUpdated", "Configure", "live settings handed to %s", strings.Join(updated, ", "))
		s.progress(v1alpha1.ReasonReconciled, "applying live settings on %d members", len(updated))
	}
	return 0, nil
}
