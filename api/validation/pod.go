package validation

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// whenUnsatisfiable are the values Kubernetes accepts in a topology spread constraint.
var whenUnsatisfiable = []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}

// validateImage refuses image references with whitespace (and empty ones if required).
func validateImage(image string, required bool, p *field.Path) field.ErrorList {
	if image == "" {
		if required {
			return field.ErrorList{field.Required(p, "an image reference")}
		}
		return nil
	}
	if strings.IndexFunc(image, unicode.IsSpace) >= 0 || hasControl(image, false) {
		return field.ErrorList{field.Invalid(p, image, "an image reference must not contain spaces or control characters")}
	}
	return nil
}

// validateImagePullSecrets checks that every pull Secret names a Secret.
func validateImagePullSecrets(refs []corev1.LocalObjectReference, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ref := range refs {
		errs = append(errs, validateSecretName(ref.Name, true, p.Index(i).Child("name"))...)
	}
	return errs
}

// validateSecretName checks a Secret name (a DNS subdomain).
func validateSecretName(name string, required bool, p *field.Path) field.ErrorList {
	if name == "" {
		if required {
			return field.ErrorList{field.Required(p, "the name of a Secret")}
		}
		return nil
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// validateResources refuses requests above limits, which no pod could be created with.
func validateResources(r corev1.ResourceRequirements, p *field.Path) field.ErrorList {
	names := make([]string, 0, len(r.Requests))
	for name := range r.Requests {
		names = append(names, string(name))
	}
	slices.Sort(names)
	var errs field.ErrorList
	for _, name := range names {
		req := r.Requests[corev1.ResourceName(name)]
		limit, ok := r.Limits[corev1.ResourceName(name)]
		if ok && req.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(p.Child("requests").Key(name), req.String(),
				fmt.Sprintf("must be less than or equal to the %s limit (%s)", name, limit.String())))
		}
	}
	return errs
}

// validateContainers checks the containers patch: every entry named, names unique,
// and sidecars (entries that patch no operator container) with an image.
func validateContainers(containers []corev1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, c := range containers {
		cp := p.Index(i)
		errs = append(errs, validateContainerName(c.Name, seen, cp.Child("name"))...)
		if c.Name != "" && c.Name != v1alpha1.ServerContainerName && c.Name != v1alpha1.ExporterContainerName && c.Image == "" {
			errs = append(errs, field.Required(cp.Child("image"), fmt.Sprintf(
				"a container other than %q or %q is added as a sidecar and needs an image",
				v1alpha1.ServerContainerName, v1alpha1.ExporterContainerName)))
		}
		errs = append(errs, validateImage(c.Image, false, cp.Child("image"))...)
	}
	return errs
}

// validateContainerName checks one container name and records it in seen.
func validateContainerName(name string, seen map[string]bool, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "every container patch needs a name")}
	}
	if seen[name] {
		return field.ErrorList{field.Duplicate(p, name)}
	}
	seen[name] = true
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// validateExporter checks the metrics sidecar settings.
func validateExporter(e v1alpha1.ExporterSpec, p *field.Path) field.ErrorList {
	errs := validateImage(e.Image, false, p.Child("image"))
	return append(errs, validateResources(e.Resources, p.Child("resources"))...)
}

// validateScheduling checks the placement settings that Kubernetes would otherwise
// refuse only when the pod is created.
func validateScheduling(s *v1alpha1.SchedulingSpec, p *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, p.Child("nodeSelector"))...)
	if s.PriorityClassName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(s.PriorityClassName) {
			errs = append(errs, field.Invalid(p.Child("priorityClassName"), s.PriorityClassName, msg))
		}
	}
	for i, c := range s.TopologySpreadConstraints {
		errs = append(errs, validateSpreadConstraint(c, p.Child("topologySpreadConstraints").Index(i))...)
	}
	return errs
}

// validateSpreadConstraint checks the three fields every constraint must have.
func validateSpreadConstraint(c corev1.TopologySpreadConstraint, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.MaxSkew < 1 {
		errs = append(errs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, "must be at least 1"))
	}
	if c.TopologyKey == "" {
		errs = append(errs, field.Required(p.Child("topologyKey"), "a node label, such as kubernetes.io/hostname"))
	}
	if !slices.Contains(whenUnsatisfiable, c.WhenUnsatisfiable) {
		errs = append(errs, field.NotSupported(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, whenUnsatisfiable))
	}
	return errs
}
