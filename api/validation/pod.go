package validation

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/valkey-operator/valkey-operator/api/memberpod"
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

// validateContainers checks the containers patch (in.Containers, at p): every entry
// named, names unique; patches of the operator's containers change only their
// environment and resources; sidecars (entries that patch no operator container) have
// an image and mount none of the operator's volumes, and are refused altogether when the
// administrator's policy says so; and the pod a member gets with them meets the
// restricted Pod Security Standard (validateMemberPod).
func validateContainers(in memberpod.Input, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	pol := CurrentPolicy()
	for i, c := range in.Containers {
		cp := p.Index(i)
		errs = append(errs, validateContainerName(c.Name, seen, cp.Child("name"))...)
		errs = append(errs, validateImage(c.Image, false, cp.Child("image"))...)
		errs = append(errs, validateEnvSecrets(c, cp)...)
		switch {
		case c.Name == v1alpha1.ServerContainerName || c.Name == v1alpha1.ExporterContainerName:
			errs = append(errs, validateOperatorContainerPatch(c, cp)...)
		case c.Name == "":
		case pol.SidecarsRefused():
			errs = append(errs, field.Forbidden(cp, fmt.Sprintf(
				"sidecars are refused by the operator's administrator (they share the pod's network and reach the "+
					"server's cluster bus); only %q and %q may be patched", v1alpha1.ServerContainerName, v1alpha1.ExporterContainerName)))
		default:
			errs = append(errs, validateSidecar(c, cp)...)
		}
	}
	return append(errs, validateMemberPod(in, pol, p, errs)...)
}

// PatchableContainerFields are the only fields a patch of the server or the exporter
// may set (besides name): what the container runs, as whom and with which files stays
// the operator's, or anyone who may edit a ValkeyCluster could run any image and
// command with the pod's Secrets mounted.
var PatchableContainerFields = []string{"env", "envFrom", "resources"}

// containerFieldReasons say why a field of the operator's containers is not patchable.
var containerFieldReasons = map[string]string{
	"image":                    "it changes what runs (set spec.image or spec.exporter.image)",
	"command":                  "it changes what runs; the operator's command loads the aclfile that keeps the default user off",
	"args":                     "it changes what runs; the operator's command loads the aclfile that keeps the default user off",
	"workingDir":               "it changes what runs",
	"securityContext":          "it changes the container's privileges",
	"lifecycle":                "it runs commands in the container (the operator's pre-stop hook hands a primary over)",
	"livenessProbe":            "it runs commands in the container or replaces the operator's probe",
	"readinessProbe":           "it runs commands in the container",
	"startupProbe":             "it runs commands in the container",
	"ports":                    "the operator declares the container's ports",
	"volumeMounts":             "the spec has no volumes of its own, and the operator's are mounted where it chose",
	"volumeDevices":            "the spec has no volumes of its own",
	"restartPolicy":            "the operator decides how its containers restart",
	"terminationMessagePath":   "the operator reads why a server stopped from it",
	"terminationMessagePolicy": "the operator reads why a server stopped from it",
}

// validateOperatorContainerPatch refuses every field of a patch of the server or the
// exporter but name, env, envFrom and resources.
func validateOperatorContainerPatch(c corev1.Container, p *field.Path) field.ErrorList {
	errs := validateResources(c.Resources, p.Child("resources"))
	for _, f := range setContainerFields(c) {
		if f == "name" || slices.Contains(PatchableContainerFields, f) {
			continue
		}
		why, ok := containerFieldReasons[f]
		if !ok {
			why = "it is not one of the fields the operator lets a spec change"
		}
		errs = append(errs, field.Forbidden(p.Child(f), fmt.Sprintf(
			"the %q container may be patched only in %s: %s", c.Name, strings.Join(PatchableContainerFields, ", "), why)))
	}
	return errs
}

// setContainerFields are the JSON names of the fields c sets, sorted.
func setContainerFields(c corev1.Container) []string {
	b, err := json.Marshal(c)
	if err != nil {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		if string(v) != "{}" && string(v) != "null" {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// validateSidecar holds a sidecar to the operator's own rules, which the Pod Security
// Standards do not cover (validateMemberPod applies those): it has an image, stays away
// from the operator's volumes (the server's configuration, passwords and TLS key, its
// data) and is a regular container of the pod.
func validateSidecar(c corev1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), fmt.Sprintf(
			"a container other than %q or %q is added as a sidecar and needs an image",
			v1alpha1.ServerContainerName, v1alpha1.ExporterContainerName)))
	}
	for j, m := range c.VolumeMounts {
		errs = append(errs, field.Forbidden(p.Child("volumeMounts").Index(j), fmt.Sprintf(
			"sidecars may not mount %q: the pod's volumes are the operator's (the server's configuration, passwords, TLS key and data)", m.Name)))
	}
	for j := range c.VolumeDevices {
		errs = append(errs, field.Forbidden(p.Child("volumeDevices").Index(j), "the pod's volumes are the operator's"))
	}
	if c.RestartPolicy != nil {
		errs = append(errs, field.Forbidden(p.Child("restartPolicy"), "sidecars are regular containers of the pod"))
	}
	return errs
}

// operatorSecretSuffixes end the names of the Secrets the operator keeps for every
// cluster: its users' passwords and the accepted TLS key.
var operatorSecretSuffixes = []string{"-system-users", "-tls-accepted"}

// validateEnvSecrets refuses environment taken from the operator's own Secrets (of any
// cluster): they hold the operator's passwords and the members' TLS key, which nothing
// a spec adds may read.
func validateEnvSecrets(c corev1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	refused := func(name string) bool {
		for _, s := range operatorSecretSuffixes {
			if strings.HasSuffix(name, s) {
				return true
			}
		}
		return false
	}
	msg := func(name string) string {
		return fmt.Sprintf("Secret %s is named like the operator's own (%s): it holds the operator's passwords or the TLS key",
			name, strings.Join(operatorSecretSuffixes, ", "))
	}
	for j, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && refused(e.ValueFrom.SecretKeyRef.Name) {
			errs = append(errs, field.Forbidden(p.Child("env").Index(j).Child("valueFrom", "secretKeyRef", "name"), msg(e.ValueFrom.SecretKeyRef.Name)))
		}
	}
	for j, e := range c.EnvFrom {
		if e.SecretRef != nil && refused(e.SecretRef.Name) {
			errs = append(errs, field.Forbidden(p.Child("envFrom").Index(j).Child("secretRef", "name"), msg(e.SecretRef.Name)))
		}
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
