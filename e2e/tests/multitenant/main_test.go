//go:build e2e

// Package multitenant is the e2e suite of the chart's policy.profile=multiTenant: as a
// namespace's editor (an impersonated user with a Role in that namespace only), what a
// shared Kubernetes must refuse is refused by the webhooks, naming the field (sidecars,
// external access the administrator did not list, the cluster's NetworkPolicy turned
// off, more members than the cap, backups more often than the minimum, an object-store
// endpoint at a metadata address, loadmodule), and what it must allow works: a cluster
// the tenant creates reaches Ready behind its NetworkPolicy.
package multitenant

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const suite = "multitenant"

var testenv env.Environment

// The administrator's lists the suite installs with: LoadBalancer Services whose
// annotations are external-dns's only, hostnames under one team's suffix.
const (
	allowedAnnotationPrefix = "external-dns.alpha.kubernetes.io/"
	allowedSuffix           = ".team-a.example.com"
)

func TestMain(m *testing.M) {
	e, err := framework.NewEnv(suite)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	e.Setup(framework.InstallOperator("policy.profile=multiTenant",
		"policy.externalAccess.allowedTypes={LoadBalancer}",
		"policy.externalAccess.allowedAnnotations={"+allowedAnnotationPrefix+"}",
		"policy.externalAccess.allowedHostnameSuffixes={"+allowedSuffix+"}"))
	testenv = e
	os.Exit(e.Run(m))
}
