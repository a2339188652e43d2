// Package status writes the status fields a controller owns with a server-side apply patch
// under the controller's own field manager. Conditions are a list map keyed by type, so
// patches from different controllers merge by type and never overwrite one another; a
// field the controller owned and no longer sends is removed.
package status

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
