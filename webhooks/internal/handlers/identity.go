package handlers

import (
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// serviceAccountPrefix starts the user name Kubernetes gives a service account.
const serviceAccountPrefix = "system:serviceaccount:"

// KubeControllers are the built-in controllers allowed to update ValkeyNodes: the
// garbage collector (owner references, the orphan and foreground finalizers) and the
// namespace controller (finalizers while a namespace is deleted).
var KubeControllers = []string{
	serviceAccountPrefix + "kube-system:generic-garbage-collector",
	serviceAccountPrefix + "kube-system:namespace-controller",
}

// Identities are the service accounts the operator runs as.
type Identities struct {
	// accounts are full user names (system:serviceaccount:<ns>:<name>).
	accounts []string
	// namespaces allow every service account of a namespace ("<ns>:*").
	namespaces []string
}

// ParseServiceAccounts reads a comma-separated list of "<namespace>:<name>" entries;
// "<namespace>:*" stands for every service account of that namespace.
func ParseServiceAccounts(list string) (Identities, error) {
	var ids Identities
	for _, entry := range strings.Split(list, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if err := ids.add(entry); err != nil {
			return Identities{}, fmt.Errorf("parse service account %q: %w", entry, err)
		}
	}
	return ids, nil
}

// add records one "<namespace>:<name>" entry.
func (i *Identities) add(entry string) error {
	ns, name, ok := strings.Cut(entry, ":")
	if !ok {
		return fmt.Errorf("want <namespace>:<name> or <namespace>:*")
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return fmt.Errorf("namespace: %s", strings.Join(errs, "; "))
	}
	if name == "*" {
		i.namespaces = append(i.namespaces, ns)
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("name: %s", strings.Join(errs, "; "))
	}
	i.accounts = append(i.accounts, serviceAccountPrefix+ns+":"+name)
	return nil
}

// Empty reports whether no service account is listed.
func (i Identities) Empty() bool { return len(i.accounts) == 0 && len(i.namespaces) == 0 }

// String lists the identities as the flag takes them.
func (i Identities) String() string {
	parts := make([]string, 0, len(i.accounts)+len(i.namespaces))
	for _, a := range i.accounts {
		parts = append(parts, strings.TrimPrefix(a, serviceAccountPrefix))
	}
	for _, ns := range i.namespaces {
		parts = append(parts, ns+":*")
	}
	return strings.Join(parts, ",")
}

// IsOperator reports whether the request comes from one of the operator's accounts.
func (i Identities) IsOperator(u authenticationv1.UserInfo) bool {
	if slices.Contains(i.accounts, u.Username) {
		return true
	}
	rest, ok := strings.CutPrefix(u.Username, serviceAccountPrefix)
	if !ok {
		return false
	}
	ns, _, _ := strings.Cut(rest, ":")
	return slices.Contains(i.namespaces, ns)
}

// isKubeController reports whether the request comes from a built-in controller that
// maintains finalizers and owner references.
func isKubeController(u authenticationv1.UserInfo) bool {
	return slices.Contains(KubeControllers, u.Username)
}
