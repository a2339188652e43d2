package plan

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"time"

	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkeyconf"
)

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	s := string(b)
	switch s {
	case "null", "{}", "[]", `""`:
		return ""
	}
	return s
}

// DesiredSpec is the ValkeyNode spec a member of shard s should have now. Revision is
// left at zero: the caller keeps the member's own or starts at 1.
func DesiredSpec(vc *v1alpha1.ValkeyCluster, s int32) v1alpha1.ValkeyNodeSpec {
	sp := vc.Spec
	exporter := *sp.Exporter.DeepCopy()
	exporter.Enabled = ptr.To(sp.Exporter.IsEnabled())
	exporter.Image = sp.Exporter.ImageOrDefault()
	spec := v1alpha1.ValkeyNodeSpec{
		ClusterName:      vc.Name,
		ShardIndex:       s,
		Replicas:         ptr.To[int32](1),
		WorkloadType:     sp.Workload(),
		Image:            sp.ImageOrDefault(),
		ImagePullSecrets: sp.ImagePullSecrets,
		Resources:        sp.Resources,
		// Keys in the one spelling every consumer reads (Valkey's own: lower case).
		Config:                        valkeyconf.Normalized(sp.Config),
		Containers:                    sp.Containers,
		Exporter:                      exporter,
		Persistence:                   sp.Persistence,
		Scheduling:                    sp.Scheduling,
		TerminationGracePeriodSeconds: ptr.To(valkeyconf.GracePeriodSeconds(sp.TerminationGracePeriodSeconds, sp.Config)),
		RestartedAt:                   RestartedAt(vc.Annotations, s),
	}
	// The Secrets as their producers name them in status; empty while one is not named,
	// and then no phase that writes a member runs (awaitPublished).
	spec.ACLSecretName, _ = v1alpha1.ACLSecretOf(vc)
	spec.SystemUsersSecretName, _ = v1alpha1.SystemUsersSecretOf(vc)
	spec.TLSSecretName, _ = v1alpha1.AcceptedTLSSecretOf(vc)
	return *spec.DeepCopy()
}

// SpecDiff says how a member's spec differs from what the cluster asks now.
type SpecDiff struct {
	// live: only keys the server takes with CONFIG SET, or a volume that grows.
	Live bool
	// roll: anything that needs a new pod.
	Roll bool
	// Fields names what differs, for messages.
	Fields []string
}

// DiffSpec compares a member's spec with the desired one for its server version.
func DiffSpec(have, want v1alpha1.ValkeyNodeSpec, v valkey.Version) SpecDiff {
	var d SpecDiff
	if !configEqual(have.Config, want.Config) {
		if onlyLiveKeysDiffer(have.Config, want.Config, v) {
			d.Live = true
		} else {
			d.Roll = true
		}
		d.Fields = append(d.Fields, "config")
	}
	if have.Persistence != nil && want.Persistence != nil && have.Persistence.Size.Cmp(want.Persistence.Size) != 0 {
		d.Live = true
		d.Fields = append(d.Fields, "persistence.size")
	}
	if have.Persistence != nil && want.Persistence != nil &&
		have.Persistence.ReclaimPolicyOrDefault() != want.Persistence.ReclaimPolicyOrDefault() {
		d.Live = true
		d.Fields = append(d.Fields, "persistence.reclaimPolicy")
	}
	// Everything else shapes the pod.
	for _, f := range PodShapingFields {
		if !reflect.DeepEqual(specField(have, f.Path), specField(want, f.Path)) {
			d.Roll = true
			d.Fields = append(d.Fields, f.Name)
		}
	}
	if RestartRequested(have.RestartedAt, want.RestartedAt) {
		d.Roll = true
		d.Fields = append(d.Fields, "RestartedAt")
	}
	return d
}

// RestartRequested reports whether a restart requested at want is later than the one
// the member's pod was built for (have): an older or removed request rolls nothing.
func RestartRequested(have, want string) bool {
	w, err := time.Parse(time.RFC3339, want)
	if err != nil {
		return false
	}
	h, err := time.Parse(time.RFC3339, have)
	return err != nil || w.After(h)
}

// RestartedAt is the latest restart the cluster's annotations request for shard sh
// (valkey.io/restarted-at for every shard, valkey.io/restarted-at-shard-N for one), in
// RFC 3339, or "" for none; a value that is no RFC 3339 time is ignored.
func RestartedAt(annotations map[string]string, sh int32) string {
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

// PodShapingFields are the ValkeyNodeSpec fields whose change needs a new pod, by path (a
// field of a field as "Persistence.StorageClassName"), with the names messages give them,
// in the order messages list them. The other fields are live (Config's live keys and
// Persistence.Size, compared above) or not compared; TestNodeSpecFieldsClassified fails on
// a field of the spec that is in none of these.
var PodShapingFields = []struct{ Path, Name string }{
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
