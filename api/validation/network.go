package validation

import (
	"fmt"
	"net/netip"

	networkingv1 "k8s.io/api/networking/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// validateNetworkPolicy checks the peers of the cluster's NetworkPolicy as the API
// server would refuse them in a NetworkPolicy, so a bad peer is refused at admission,
// not when the operator writes the policy.
func validateNetworkPolicy(np *v1alpha1.NetworkPolicySpec, p *field.Path) field.ErrorList {
	if np == nil {
		return nil
	}
	var errs field.ErrorList
	for i, peer := range np.Clients {
		errs = append(errs, validatePeer(peer, p.Child("clients").Index(i))...)
	}
	for i, peer := range np.Metrics {
		errs = append(errs, validatePeer(peer, p.Child("metrics").Index(i))...)
	}
	return errs
}

// validatePeer checks one peer: either an ipBlock or selectors, each well formed.
func validatePeer(peer networkingv1.NetworkPolicyPeer, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	selectors := peer.PodSelector != nil || peer.NamespaceSelector != nil
	switch {
	case peer.IPBlock != nil && selectors:
		return field.ErrorList{field.Forbidden(p, "set either ipBlock or podSelector/namespaceSelector, not both")}
	case peer.IPBlock == nil && !selectors:
		return field.ErrorList{field.Required(p, "an ipBlock, a podSelector or a namespaceSelector")}
	case peer.IPBlock != nil:
		return validateIPBlock(peer.IPBlock, p.Child("ipBlock"))
	}
	opts := metav1validation.LabelSelectorValidationOptions{}
	if peer.PodSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(peer.PodSelector, opts, p.Child("podSelector"))...)
	}
	if peer.NamespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(peer.NamespaceSelector, opts, p.Child("namespaceSelector"))...)
	}
	return errs
}

// validateIPBlock checks the CIDR and that every exception lies within it.
func validateIPBlock(b *networkingv1.IPBlock, p *field.Path) field.ErrorList {
	cidr, err := netip.ParsePrefix(b.CIDR)
	if err != nil {
		return field.ErrorList{field.Invalid(p.Child("cidr"), b.CIDR, "must be a CIDR such as 10.0.0.0/8")}
	}
	if cidr.Masked() != cidr {
		return field.ErrorList{field.Invalid(p.Child("cidr"), b.CIDR, fmt.Sprintf("has address bits set beyond the prefix length: write %s", cidr.Masked()))}
	}
	var errs field.ErrorList
	for i, e := range b.Except {
		ex, err := netip.ParsePrefix(e)
		if err != nil {
			errs = append(errs, field.Invalid(p.Child("except").Index(i), e, "must be a CIDR"))
			continue
		}
		if ex.Masked() != ex {
			errs = append(errs, field.Invalid(p.Child("except").Index(i), e, fmt.Sprintf("has address bits set beyond the prefix length: write %s", ex.Masked())))
			continue
		}
		if !cidr.Contains(ex.Addr()) || ex.Bits() <= cidr.Bits() {
			errs = append(errs, field.Invalid(p.Child("except").Index(i), e, fmt.Sprintf("must be a strict subset of %s", b.CIDR)))
		}
	}
	return errs
}
