package validation

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/valkey-operator/valkey-operator/api/memberpod"
)

// validateMemberPod checks the pod a member of this spec gets with the upstream Pod
// Security library at restricted, latest (memberpod.Level): the whole pod as the
// node-controller renders it (memberpod.Skeleton: the server, the exporter, their
// volumes, and the entries of spec.containers at p merged in). Each violation is refused
// with the field of spec.containers that causes it and the library's reason. Entries
// the other rules refuse (unnamed ones, sidecars the policy refuses) are left out of the
// pod, and a violation under a field already refused (in known) is not repeated.
func validateMemberPod(in memberpod.Input, pol Policy, p *field.Path, known field.ErrorList) field.ErrorList {
	all := in.Containers
	in.Containers = nil
	for _, c := range all {
		if c.Name != "" && (!memberpod.IsSidecar(c.Name) || !pol.SidecarsRefused()) {
			in.Containers = append(in.Containers, c)
		}
	}
	spec, err := memberpod.Skeleton(in)
	if err != nil {
		return field.ErrorList{field.InternalError(p, fmt.Errorf("render a member's pod: %w", err))}
	}
	var errs field.ErrorList
	for _, e := range PodSecurityErrors(memberpod.Check(nil, &spec, all, p), p) {
		if !under(known, e.Field) {
			errs = append(errs, e)
		}
	}
	return errs
}

// PodSecurityErrors turns the violations memberpod.Check found in a member's pod into
// errors: Forbidden at the user's field that causes each, or, for what the operator
// renders itself (a bug of the operator, never the user's doing), an internal error
// at p (spec.containers). The node-controller reports the pod it renders with it.
func PodSecurityErrors(vs []memberpod.Violation, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, v := range vs {
		if v.Field != nil {
			errs = append(errs, field.Forbidden(v.Field, v.Message()))
			continue
		}
		where := "the pod the operator renders for a member"
		if v.Container != "" {
			where = fmt.Sprintf("the %q container the operator renders", v.Container)
		}
		errs = append(errs, field.InternalError(p, fmt.Errorf("%s %s", where, v.Message())))
	}
	return errs
}

// under reports whether path is one of the errors' fields or lies under one.
func under(errs field.ErrorList, path string) bool {
	for _, e := range errs {
		if path == e.Field || strings.HasPrefix(path, e.Field+".") || strings.HasPrefix(path, e.Field+"[") {
			return true
		}
	}
	return false
}
