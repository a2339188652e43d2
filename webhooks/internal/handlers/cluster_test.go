package handlers

import (
	"context"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func TestClusterValidatorCreate(t *testing.T) {
	for _, tc := range []struct {
		name         string
		mutate       func(c *v1alpha1.ValkeyCluster)
		want         []string
		wantWarnings int
	}{
		{name: "valid"},
		{name: "reserved user name", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Users = []v1alpha1.UserSpec{{Name: "_admin", NoPass: true}}
		}, want: []string{`ValkeyCluster.valkey.io "demo" is invalid`, "spec.users[0].name"}},
		{name: "owned config key", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Config = map[string]string{"port": "1"}
		}, want: []string{"spec.config[port]: Forbidden"}},
		{name: "short grace period is a warning", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
		}, wantWarnings: 1},
		{name: "errors and warnings together", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
			c.Spec.WorkloadType = "Job"
		}, want: []string{"spec.workloadType"}, wantWarnings: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testCluster()
			if tc.mutate != nil {
				tc.mutate(c)
			}
			warnings, err := ClusterValidator{}.ValidateCreate(context.Background(), c)
			expectError(t, err, tc.want)
			if err != nil && !apierrors.IsInvalid(err) {
				t.Errorf("want an Invalid API error, got %T", err)
			}
			if len(warnings) != tc.wantWarnings {
				t.Errorf("want %d warnings, got %q", tc.wantWarnings, warnings)
			}
		})
	}
}

func TestClusterValidatorUpdate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mutateOld func(c *v1alpha1.ValkeyCluster)
		mutateNew func(c *v1alpha1.ValkeyCluster)
		want      []string
		// warnings are substrings of the warnings wanted, in order; none when empty.
		warnings []string
	}{
		{name: "scale out", mutateNew: func(c *v1alpha1.ValkeyCluster) { c.Spec.Shards = 5 }},
		{name: "scale out of a cluster with a key the key table lacks: admitted, with a warning",
			mutateOld: func(c *v1alpha1.ValkeyCluster) { c.Spec.Config = map[string]string{"lua-replicate-commands": "yes"} },
			mutateNew: func(c *v1alpha1.ValkeyCluster) {
				c.Spec.Config = map[string]string{"lua-replicate-commands": "yes"}
				c.Spec.Shards = 5
			}, warnings: []string{"spec.config[lua-replicate-commands]: Invalid value"}},
		{name: "a key the key table lacks, added: refused, not warned of",
			mutateNew: func(c *v1alpha1.ValkeyCluster) { c.Spec.Config = map[string]string{"lua-replicate-commands": "yes"} },
			want:      []string{"spec.config[lua-replicate-commands]: Invalid value"}},
		{name: "workload type changed",
			mutateNew: func(c *v1alpha1.ValkeyCluster) { c.Spec.WorkloadType = v1alpha1.WorkloadDeployment },
			want:      []string{"spec.workloadType", "is immutable"}},
		{name: "metadata-only change of a cluster that breaks today's rules is admitted",
			mutateOld: func(c *v1alpha1.ValkeyCluster) { c.Spec.Config = map[string]string{"port": "1"} },
			mutateNew: func(c *v1alpha1.ValkeyCluster) {
				c.Spec.Config = map[string]string{"port": "1"}
				c.Finalizers = nil
				c.Labels = map[string]string{"team": "a"}
			}},
		{name: "spec change of such a cluster is checked",
			mutateOld: func(c *v1alpha1.ValkeyCluster) { c.Spec.Config = map[string]string{"port": "1"} },
			mutateNew: func(c *v1alpha1.ValkeyCluster) {
				c.Spec.Config = map[string]string{"port": "1"}
				c.Spec.Shards = 4
			}, want: []string{"spec.config[port]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, c := testCluster(), testCluster()
			if tc.mutateOld != nil {
				tc.mutateOld(old)
			}
			if tc.mutateNew != nil {
				tc.mutateNew(c)
			}
			warnings, err := ClusterValidator{}.ValidateUpdate(context.Background(), old, c)
			expectError(t, err, tc.want)
			if len(warnings) != len(tc.warnings) {
				t.Fatalf("want %d warnings, got %q", len(tc.warnings), warnings)
			}
			for i, w := range tc.warnings {
				if !strings.Contains(warnings[i], w) {
					t.Errorf("warning %d = %q; want it to contain %q", i, warnings[i], w)
				}
			}
		})
	}
}

func TestClusterValidatorDelete(t *testing.T) {
	c := testCluster()
	c.Spec.Shards = -1
	if _, err := (ClusterValidator{}).ValidateDelete(context.Background(), c); err != nil {
		t.Fatalf("want every deletion admitted, got %v", err)
	}
}

// TestClusterWebhookResponses goes through controller-runtime's handler, as the API
// server's requests do: decoding, status codes, warnings.
func TestClusterWebhookResponses(t *testing.T) {
	hook := admission.WithValidator(testScheme(t), admission.Validator[*v1alpha1.ValkeyCluster](ClusterValidator{}))
	invalid := testCluster()
	invalid.Spec.Users = []v1alpha1.UserSpec{{Name: "alice"}}
	short := testCluster()
	short.Spec.TerminationGracePeriodSeconds = ptr.To[int64](3)
	for _, tc := range []struct {
		name        string
		req         admission.Request
		wantAllowed bool
		wantCode    int32
		wantText    string
	}{
		{name: "create valid", req: review(t, admissionv1.Create, "alice", testCluster(), nil), wantAllowed: true},
		{name: "create invalid", req: review(t, admissionv1.Create, "alice", invalid, nil),
			wantCode: http.StatusUnprocessableEntity, wantText: "spec.users[0].passwordSecret: Required value"},
		{name: "create with warning", req: review(t, admissionv1.Create, "alice", short, nil), wantAllowed: true,
			wantText: "spec.terminationGracePeriodSeconds: 3 s"},
		{name: "update invalid", req: review(t, admissionv1.Update, "alice", invalid, testCluster()),
			wantCode: http.StatusUnprocessableEntity, wantText: "spec.users[0]"},
		{name: "delete", req: review(t, admissionv1.Delete, "alice", nil, invalid), wantAllowed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := hook.Handle(context.Background(), tc.req)
			if resp.Allowed != tc.wantAllowed {
				t.Fatalf("allowed = %v, want %v (%v)", resp.Allowed, tc.wantAllowed, resp.Result)
			}
			text := strings.Join(resp.Warnings, "\n")
			if resp.Result != nil {
				text += resp.Result.Message
				if !tc.wantAllowed && resp.Result.Code != tc.wantCode {
					t.Errorf("code = %d, want %d", resp.Result.Code, tc.wantCode)
				}
			}
			if !strings.Contains(text, tc.wantText) {
				t.Errorf("want %q in the response, got %q", tc.wantText, text)
			}
		})
	}
}
