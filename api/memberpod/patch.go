package memberpod

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// IsSidecar reports whether a spec.containers entry of that name is added to the pod
// as a container of its own, rather than merged into one of the operator's.
func IsSidecar(name string) bool {
	return name != v1alpha1.ServerContainerName && name != v1alpha1.ExporterContainerName
}

// PatchContainers applies the user's container patches (spec.containers) as a
// strategic merge patch of the pod spec: entries named like a container of the pod are
// merged into it by name (the exporter, a native sidecar, among the init containers),
// any other entry is appended and restricted (RestrictSidecar). A patch of the exporter
// is dropped when the exporter is disabled: there is nothing to merge it into.
func PatchContainers(spec corev1.PodSpec, patches []corev1.Container, exporter bool) (corev1.PodSpec, error) {
	var containers, initContainers []corev1.Container
	for _, c := range patches {
		switch {
		case c.Name == v1alpha1.ExporterContainerName && exporter:
			initContainers = append(initContainers, c)
		case c.Name == v1alpha1.ExporterContainerName:
		default:
			containers = append(containers, c)
		}
	}
	if len(containers) == 0 && len(initContainers) == 0 {
		return spec, nil
	}
	patch := map[string]any{}
	if len(containers) > 0 {
		patch["containers"] = containers
	}
	if len(initContainers) > 0 {
		patch["initContainers"] = initContainers
	}
	out, err := strategicMerge(spec, patch)
	if err != nil {
		return corev1.PodSpec{}, err
	}
	for i := range out.Containers {
		if out.Containers[i].Name != v1alpha1.ServerContainerName {
			RestrictSidecar(&out.Containers[i])
		}
	}
	return out, nil
}

// strategicMerge applies patch to spec with the PodSpec's merge keys.
func strategicMerge(spec corev1.PodSpec, patch map[string]any) (corev1.PodSpec, error) {
	original, err := json.Marshal(spec)
	if err != nil {
		return corev1.PodSpec{}, fmt.Errorf("encode pod spec: %w", err)
	}
	p, err := json.Marshal(patch)
	if err != nil {
		return corev1.PodSpec{}, fmt.Errorf("encode container patches: %w", err)
	}
	merged, err := strategicpatch.StrategicMergePatch(original, p, corev1.PodSpec{})
	if err != nil {
		return corev1.PodSpec{}, fmt.Errorf("apply container patches: %w", err)
	}
	var out corev1.PodSpec
	if err := json.Unmarshal(merged, &out); err != nil {
		return corev1.PodSpec{}, fmt.Errorf("decode patched pod spec: %w", err)
	}
	return out, nil
}
