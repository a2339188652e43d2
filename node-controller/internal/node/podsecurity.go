package node

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/valkey-operator/valkey-operator/api/memberpod"
	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/api/validation"
)

// containersPath is where the user's container entries are in a node's spec.
var containersPath = field.NewPath("spec", "containers")

// renderedPodErrors checks the pod the controller renders for a node with the Pod
// Security library at restricted, latest (memberpod.Check): admission and the guard
// check memberpod.Skeleton, which stands for this pod; this check holds the pod itself,
// so no workload is written with a pod that breaks the standard. The config hash is
// left out (the check reads no annotation of the operator's); a template that cannot be
// built is reconcileWorkload's to report.
func renderedPodErrors(vn *v1alpha1.ValkeyNode) field.ErrorList {
	tmpl, err := buildPodTemplate(vn, "")
	if err != nil {
		return nil
	}
	return validation.PodSecurityErrors(memberpod.Check(&tmpl.ObjectMeta, &tmpl.Spec, vn.Spec.Containers, containersPath), containersPath)
}
