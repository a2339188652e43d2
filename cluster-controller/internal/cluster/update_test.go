package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan/plantest"
	"github.com/valkey-operator/valkey-operator/internal/guard"
)

func TestGracePeriod(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*v1alpha1.ValkeyClusterSpec)
		want int64
		warn bool
	}{
		{"default", nil, 30, false},
		{"long manual failover timeout raises it", func(s *v1alpha1.ValkeyClusterSpec) {
			s.Config = map[string]string{"cluster-manual-failover-timeout": "60000"}
		}, 70, false},
		{"in any spelling", func(s *v1alpha1.ValkeyClusterSpec) {
			s.Config = map[string]string{"Cluster-Manual-Failover-Timeout": "60000"}
		}, 70, false},
		{"explicit is honoured", func(s *v1alpha1.ValkeyClusterSpec) { s.TerminationGracePeriodSeconds = ptr.To[int64](60) }, 60, false},
		{"explicit too short warns", func(s *v1alpha1.ValkeyClusterSpec) { s.TerminationGracePeriodSeconds = ptr.To[int64](5) }, 5, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vc := plantest.Cluster(c.mod)
			if got := *plan.DesiredSpec(vc, 0).TerminationGracePeriodSeconds; got != c.want {
				t.Errorf("grace period = %d, want %d", got, c.want)
			}
			cond := graceCondition(vc, 1)
			if (cond.Status == metav1.ConditionTrue) != c.warn {
				t.Errorf("warning = %v (%s), want %v", cond.Status, cond.Message, c.warn)
			}
			if c.warn && cond.Reason != v1alpha1.ReasonGracePeriodTooShort {
				t.Errorf("reason = %s", cond.Reason)
			}
		})
	}
}

// TestConfigurationWarning: config entries the key table refuses in a stored cluster
// (the guard's warnings) raise ConfigurationWarning, with the grace period's finding.
func TestConfigurationWarning(t *testing.T) {
	many := map[string]string{}
	for i := range 7 {
		many[fmt.Sprintf("old-key-%d", i)] = "yes"
	}
	for _, tc := range []struct {
		name   string
		mod    func(*v1alpha1.ValkeyClusterSpec)
		reason string
		want   []string
		absent string
	}{
		{name: "nothing to say", reason: v1alpha1.ReasonNoWarnings},
		{name: "an unknown key", mod: func(s *v1alpha1.ValkeyClusterSpec) { s.Config = map[string]string{"lua-replicate-commands": "yes"} },
			reason: v1alpha1.ReasonUnsupportedConfig,
			want: []string{`spec.config[lua-replicate-commands]: Invalid value: "lua-replicate-commands": is not a configuration key`,
				"the chart's policy.allowedConfigKeys", "a server may refuse the entry at the next restart of a member: remove or correct it"}},
		{name: "a value of the wrong type and a short grace period", mod: func(s *v1alpha1.ValkeyClusterSpec) {
			s.Config = map[string]string{"maxmemory": "lots"}
			s.TerminationGracePeriodSeconds = ptr.To[int64](5)
		}, reason: v1alpha1.ReasonUnsupportedConfig,
			want: []string{`spec.config[maxmemory]: Invalid value: "lots"`, "terminationGracePeriodSeconds 5 is below 15 s"}},
		{name: "many entries are counted past the first five", mod: func(s *v1alpha1.ValkeyClusterSpec) { s.Config = many },
			reason: v1alpha1.ReasonUnsupportedConfig, want: []string{"spec.config[old-key-4]", "; and 2 more config entries"}, absent: "old-key-5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vc := plantest.Cluster(func(s *v1alpha1.ValkeyClusterSpec) {
				s.Shards, s.ReplicasPerShard, s.Image = 3, ptr.To[int32](1), v1alpha1.DefaultImage
				if tc.mod != nil {
					tc.mod(s)
				}
			})
			g := guard.Check(vc)
			if !g.Valid() {
				t.Fatalf("guard: %v; want the spec valid", g.Errs)
			}
			cond := warningCondition(g.ConfigWarnings, vc, 1)
			if cond.Type != v1alpha1.ConditionConfigurationWarning || cond.Reason != tc.reason ||
				(cond.Status == metav1.ConditionTrue) != (tc.reason != v1alpha1.ReasonNoWarnings) {
				t.Errorf("condition = %s %s %s; want reason %s", cond.Type, cond.Status, cond.Reason, tc.reason)
			}
			for _, w := range tc.want {
				if !strings.Contains(cond.Message, w) {
					t.Errorf("message %q; want it to contain %q", cond.Message, w)
				}
			}
			if tc.absent != "" && strings.Contains(cond.Message, tc.absent) {
				t.Errorf("message %q; want no %q", cond.Message, tc.absent)
			}
		})
	}
}

// TestDesiredSpecMountsThePublishedSecrets: a member mounts the Secrets the acl- and
// tls-controllers name in the cluster's status, whatever their names, and a pass does not
// create or change members while one is not named (Progressing says what it waits for).
func TestDesiredSpecMountsThePublishedSecrets(t *testing.T) {
	vc := plantest.Cluster(func(s *v1alpha1.ValkeyClusterSpec) {
		s.TLS = &v1alpha1.TLSSpec{Certificate: &v1alpha1.CertificateSpec{SecretName: "user-cert"}}
	})
	if got := unpublished(vc); got == nil || got.Reason != v1alpha1.ReasonWaitingForACL {
		t.Errorf("nothing published: unpublished = %v; want the acl-controller's Secrets", got)
	}
	vc.Status.ACL = &v1alpha1.ACLStatus{SecretName: "named-acl", SystemUsersSecretName: "named-users"}
	if got := unpublished(vc); got == nil || got.Error() != "status.tls.acceptedSecretName is not set: waiting for the tls-controller "+
		"(TLSReady is not reported yet: is the tls-controller running?)" {
		t.Errorf("no accepted certificate named: unpublished = %v", got)
	}
	vc.Status.TLS = &v1alpha1.TLSStatus{SecretName: "user-cert", AcceptedSecretName: "named-copy"}
	if got := unpublished(vc); got != nil {
		t.Errorf("all published: unpublished = %v", got)
	}
	spec := plan.DesiredSpec(vc, 0)
	if spec.ACLSecretName != "named-acl" || spec.SystemUsersSecretName != "named-users" || spec.TLSSecretName != "named-copy" {
		t.Errorf("secrets = %q %q %q; want those status names", spec.ACLSecretName, spec.SystemUsersSecretName, spec.TLSSecretName)
	}

	s := &scope{Cluster: plan.Cluster{VC: vc, Unpublished: &v1alpha1.NotPublishedError{Field: "status.acl.secretName", Producer: "acl-controller",
		Reason: v1alpha1.ReasonWaitingForACL, Condition: "ACLReady=False PasswordMissing: user app: Secret pw not found"}}}
	wait, err := (&Reconciler{}).awaitPublished(context.Background(), s)
	if err != nil || wait == 0 {
		t.Errorf("awaitPublished = %v, %v; want the pass stopped", wait, err)
	}
	if want := "status.acl.secretName is not set: waiting for the acl-controller (ACLReady=False PasswordMissing: user app: Secret pw not found)"; s.step.reason != v1alpha1.ReasonWaitingForACL || s.step.message != want {
		t.Errorf("progress = %s %q; want WaitingForACL %q", s.step.reason, s.step.message, want)
	}
}
