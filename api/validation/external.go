package validation

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkeyconf"
)

// NodePortMinimum is the first Valkey version that can announce a client port apart
// from the port replicas connect to (cluster-announce-client-port), which NodePort needs.
var NodePortMinimum = valkeyconf.Version{Major: 9}

// NodePortUnsupported is why NodePort is refused on Valkey 8.x, for errors and for the
// condition a member of such a version reports.
const NodePortUnsupported = "Valkey 8.x has no client-only port: cluster-announce-client-port exists from 9.0 " +
	"(cluster-announce-client-ipv4 from 8.0), and on 8.x the announced port is also the port replicas " +
	"connect to, so it cannot be a node port; use LoadBalancer (same port 6379) or an image of Valkey 9.0 or later"

// operatorServiceLabels are the labels of a per-member Service that the operator sets
// and spec.externalAccess.labels may not replace.
var operatorServiceLabels = []string{v1alpha1.LabelName, v1alpha1.LabelInstance, v1alpha1.LabelManagedBy, v1alpha1.LabelNode, v1alpha1.LabelShardIndex}

// validateExternalAccess checks spec.externalAccess; image is the cluster's image, whose
// tag may say that its Valkey cannot announce a node port.
func validateExternalAccess(e *v1alpha1.ExternalAccessSpec, image string, p *field.Path) field.ErrorList {
	if e == nil {
		return nil
	}
	var errs field.ErrorList
	switch e.Type {
	case "", v1alpha1.ExternalAccessNone, v1alpha1.ExternalAccessLoadBalancer:
	case v1alpha1.ExternalAccessNodePort:
		if v, known := valkeyconf.ImageVersion(image); valkeyconf.SurelyLacks(v, known, NodePortMinimum) {
			errs = append(errs, field.Forbidden(p.Child("type"), fmt.Sprintf(
				"NodePort is refused for the image %s (Valkey %s): %s", image, describeTagVersion(v, known), NodePortUnsupported)))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), e.Type, []string{
			string(v1alpha1.ExternalAccessNone), string(v1alpha1.ExternalAccessNodePort), string(v1alpha1.ExternalAccessLoadBalancer)}))
	}
	errs = append(errs, validateServiceMeta(e, p)...)
	errs = append(errs, validateHostnameTemplate(e.HostnameTemplate, p.Child("hostnameTemplate"))...)
	for i, r := range e.LoadBalancerSourceRanges {
		if _, err := netip.ParsePrefix(strings.TrimSpace(r)); err != nil {
			errs = append(errs, field.Invalid(p.Child("loadBalancerSourceRanges").Index(i), r, "must be a CIDR such as 203.0.113.0/24"))
		}
	}
	if len(e.LoadBalancerSourceRanges) > 0 && e.Type != v1alpha1.ExternalAccessLoadBalancer {
		errs = append(errs, field.Forbidden(p.Child("loadBalancerSourceRanges"), "applies to type LoadBalancer only"))
	}
	switch e.ExternalTrafficPolicy {
	case "", corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal:
	default:
		errs = append(errs, field.NotSupported(p.Child("externalTrafficPolicy"), e.ExternalTrafficPolicy, []string{
			string(corev1.ServiceExternalTrafficPolicyCluster), string(corev1.ServiceExternalTrafficPolicyLocal)}))
	}
	return errs
}

// validateServiceMeta checks the annotations and labels of the per-member Services as
// the API server would, and keeps the operator's own labels.
func validateServiceMeta(e *v1alpha1.ExternalAccessSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateAnnotations(e.Annotations, p.Child("annotations"))...)
	errs = append(errs, metav1validation.ValidateLabels(e.Labels, p.Child("labels"))...)
	for _, k := range operatorServiceLabels {
		if _, ok := e.Labels[k]; ok {
			errs = append(errs, field.Forbidden(p.Child("labels").Key(k), "is set by the operator"))
		}
	}
	if _, ok := e.Annotations[v1alpha1.AnnotationExternalDNSHostname]; ok && e.HostnameTemplate != "" {
		errs = append(errs, field.Forbidden(p.Child("annotations").Key(v1alpha1.AnnotationExternalDNSHostname),
			"is set by the operator to each member's name from hostnameTemplate"))
	}
	return errs
}

// validateAnnotations checks annotation keys (qualified names) and their total size.
func validateAnnotations(a map[string]string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	total := 0
	for k, v := range a {
		for _, msg := range validation.IsQualifiedName(strings.ToLower(k)) {
			errs = append(errs, field.Invalid(p, k, msg))
		}
		total += len(k) + len(v)
	}
	if total > 256*1024 {
		errs = append(errs, field.TooLong(p, "", 256*1024))
	}
	return errs
}

// validateHostnameTemplate checks that the template names each member by a DNS name of
// its own: {member} is a whole label, and what it renders to is a DNS subdomain.
func validateHostnameTemplate(t string, p *field.Path) field.ErrorList {
	if t == "" {
		return nil
	}
	labels := strings.Split(t, ".")
	member := false
	for _, l := range labels {
		if l == "{member}" {
			member = true
		}
	}
	if !member {
		return field.ErrorList{field.Invalid(p, t, "must have {member} as one whole label (for example {member}.valkey.example.com): each member needs a name of its own")}
	}
	// A member's name is at most the cluster name's 40 characters plus its suffix.
	sample := strings.NewReplacer("{member}", "m"+strings.Repeat("x", 46), "{cluster}", "c", "{namespace}", "n").Replace(t)
	if strings.ContainsAny(sample, "{}") {
		return field.ErrorList{field.Invalid(p, t, "knows the placeholders {member}, {cluster} and {namespace} only")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(sample) {
		errs = append(errs, field.Invalid(p, t, "must render to a DNS name: "+msg))
	}
	return errs
}
