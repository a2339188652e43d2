//go:build e2e

// Package acl is the e2e suite of ACL users as code: the users of the spec, with their
// passwords from Secrets, are live on every member and give exactly the rights written;
// password, user and Secret changes reach every member within seconds without a
// restart; a missing password is reported and changes nothing; the operator's own
// passwords rotate under load without breaking replication, the exporter or a write;
// and no password ever shows in the operator's logs, events or statuses.
package acl

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const suite = "acl"

// propagationDelay is the acl-controller's --secret-propagation-delay for this suite
// (default 2 min): how long a rotation waits for mounted Secrets before it retires the
// old passwords. The kubelet refreshes a mounted Secret on its pod resync, 60 to 90 s
// after the change; the pre-stop hook reads the _lifecycle password from that file, so a
// delay shorter than that retires passwords the mounted files may still hold. 90 s keeps
// the rotation about 90 s long.
const propagationDelay = "90s"

var testenv env.Environment

func TestMain(m *testing.M) {
	e, err := framework.NewEnv(suite)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	e.Setup(framework.InstallOperator("aclController.extraArgs={--secret-propagation-delay=" + propagationDelay + "}"))
	testenv = e
	os.Exit(e.Run(m))
}
