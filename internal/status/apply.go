// Package status writes the status fields a controller owns with a server-side apply patch
// under the controller's own field manager. Conditions are a list map keyed by type, so
// patches from different controllers merge by type and never overwrite one another; a
// field the controller owned and no longer sends is removed.
package status

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

// Apply sends owned as the status of obj, applied by fieldOwner. owned is a struct holding
// only the fields fieldOwner writes (with omitempty on optional ones).
func Apply(ctx context.Context, c client.Client, fieldOwner string, obj client.Object, gvk schema.GroupVersionKind, owned any) error {
	body, err := patchBody(obj, gvk, owned)
	if err != nil {
		return err
	}
	if err := c.Status().Patch(ctx, obj, client.RawPatch(types.ApplyPatchType, body),
		client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply status of %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

func patchBody(obj client.Object, gvk schema.GroupVersionKind, owned any) ([]byte, error) {
	meta := map[string]any{"name": obj.GetName()}
	if ns := obj.GetNamespace(); ns != "" {
		meta["namespace"] = ns
	}
	return json.Marshal(map[string]any{
		"apiVersion": gvk.GroupVersion().String(),
		"kind":       gvk.Kind,
		"metadata":   meta,
		"status":     owned,
	})
}

// Equal reports whether two owned-status values serialise the same way, so a controller
// can skip a write that would change nothing (steady state costs no API writes).
func Equal(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// Writer writes the status a controller owns on ValkeyClusters and ValkeyNodes: its
// condition types and, on a cluster, one status field of its own (status.acl,
// status.tls), each only when it changed, so a steady cluster costs no API write.
type Writer struct {
	Client client.Client
	// FieldManager is the controller's field manager.
	FieldManager string
	// Clock stamps condition transitions (default time.Now).
	Clock func() time.Time
}

func (w Writer) now() time.Time {
	if w.Clock != nil {
		return w.Clock()
	}
	return time.Now()
}

// Field is a cluster status field a controller owns, by its JSON name, with its value
// before the pass (from the object read) and the one to write (nil: the field is not
// sent, so the controller gives it up).
type Field struct {
	Name          string
	Before, After any
}

// Cluster applies conds and the owned field on vc when any of them changed. A condition
// type the controller owned and no longer sends is given up, which needs a write of its
// own: InvalidSpec, raised by each controller's guard, goes once the spec is valid again
// (or stays with the value of the other controllers that still own it).
func (w Writer) Cluster(ctx context.Context, vc *v1alpha1.ValkeyCluster, field *Field, conds ...metav1.Condition) error {
	types := make([]string, 0, len(conds))
	for _, c := range conds {
		types = append(types, c.Type)
	}
	after := conditions.Resolve(vc.Status.Conditions, w.now(), conds...)
	changed := conditions.Changed(conditions.Owned(vc.Status.Conditions, types...), after) ||
		(!slices.Contains(types, v1alpha1.ConditionInvalidSpec) && w.owns(vc, v1alpha1.ConditionInvalidSpec))
	owned := map[string]any{}
	if len(after) > 0 {
		owned["conditions"] = after
	}
	if field != nil {
		if !isNil(field.After) {
			owned[field.Name] = field.After
		}
		changed = changed || !Equal(nilIfNil(field.Before), nilIfNil(field.After))
	}
	if !changed {
		return nil
	}
	return Apply(ctx, w.Client, w.FieldManager, vc, v1alpha1.GroupVersion.WithKind("ValkeyCluster"), owned)
}

// Node applies conds on a member when they changed.
func (w Writer) Node(ctx context.Context, vn *v1alpha1.ValkeyNode, conds ...metav1.Condition) error {
	types := make([]string, 0, len(conds))
	for _, c := range conds {
		types = append(types, c.Type)
	}
	after := conditions.Resolve(vn.Status.Conditions, w.now(), conds...)
	if !conditions.Changed(conditions.Owned(vn.Status.Conditions, types...), after) {
		return nil
	}
	return Apply(ctx, w.Client, w.FieldManager, vn, v1alpha1.GroupVersion.WithKind("ValkeyNode"),
		map[string]any{"conditions": after})
}

// owns reports whether the writer's field manager owns the status condition typ of obj.
func (w Writer) owns(obj metav1.Object, typ string) bool {
	key := fmt.Sprintf(`"k:{\"type\":\"%s\"}"`, typ)
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == w.FieldManager && mf.Subresource == "status" && mf.FieldsV1 != nil &&
			strings.Contains(mf.FieldsV1.GetRawString(), key) {
			return true
		}
	}
	return false
}

// isNil reports whether v is nil or a nil pointer.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

func nilIfNil(v any) any {
	if isNil(v) {
		return nil
	}
	return v
}
