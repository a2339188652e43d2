package health

import (
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// The testdata objects are ValkeyClusters as the cluster-controller wrote them in its
// integration suite (STATUS_CAPTURE_DIR=<this folder> go test ./internal/cluster/
// -run TestIntegration -ginkgo.focus='fails over on request' in cluster-controller):
// Ready with its spec applied, rolling after a resources change, paused with a change
// waiting.
func TestToolsReadTheStatus(t *testing.T) {
	script, err := ArgoCDScript()
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		kstatus status.Status
		argo    string
	}
	cases := map[string]struct {
		file   string
		mutate func(map[string]any)
		want   want
	}{
		"ready":   {file: "ready", want: want{status.CurrentStatus, "Healthy"}},
		"rolling": {file: "rolling", want: want{status.InProgressStatus, "Progressing"}},
		"paused":  {file: "paused", want: want{status.InProgressStatus, "Suspended"}},
		// The object right after an edit, before the controller saw it.
		"edited, not observed yet": {file: "ready", mutate: func(o map[string]any) {
			g, _, _ := unstructured.NestedInt64(o, "metadata", "generation")
			_ = unstructured.SetNestedField(o, g+1, "metadata", "generation")
		}, want: want{status.InProgressStatus, "Progressing"}},
		// A user must act (a roll blocked): the controller's Stalled condition True.
		"stalled": {file: "rolling", mutate: func(o map[string]any) {
			// As the controller writes it: Progressing True, Reconciling False, Stalled True.
			msg := "shard 0: the roll is blocked: successor vk-x cannot run"
			setCondition(t, o, "Progressing", "True", "RollBlocked", msg)
			setCondition(t, o, "Reconciling", "False", "RollBlocked", msg)
			setCondition(t, o, "Stalled", "True", "RollBlocked", msg)
		}, want: want{status.FailedStatus, "Degraded"}},
		// Not serving, and the operator not working on it.
		"not ready": {file: "ready", mutate: func(o map[string]any) {
			setCondition(t, o, "Ready", "False", "SlotsUncovered", "12 of 16384 slots have no primary")
		}, want: want{status.InProgressStatus, "Degraded"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			obj, err := ReadObject(filepath.Join("testdata", c.file+".json"))
			if err != nil {
				t.Fatal(err)
			}
			if c.mutate != nil {
				c.mutate(obj)
			}
			ks, msg, err := Kstatus(obj)
			if err != nil {
				t.Fatal(err)
			}
			if ks != c.want.kstatus {
				t.Errorf("kstatus: %s (%s), want %s", ks, msg, c.want.kstatus)
			}
			hs, hmsg, err := ArgoCD(script, obj)
			if err != nil {
				t.Fatal(err)
			}
			if hs != c.want.argo {
				t.Errorf("Argo CD: %s (%s), want %s", hs, hmsg, c.want.argo)
			}
			t.Logf("kstatus %s (%s); Argo CD %s (%s)", ks, msg, hs, hmsg)
		})
	}
}

// setCondition sets a condition of the object's status.
func setCondition(t *testing.T, o map[string]any, typ, st, reason, msg string) {
	t.Helper()
	conds, _, _ := unstructured.NestedSlice(o, "status", "conditions")
	for i, c := range conds {
		m := c.(map[string]any)
		if m["type"] == typ {
			m["status"], m["reason"], m["message"] = st, reason, msg
			conds[i] = m
		}
	}
	if err := unstructured.SetNestedSlice(o, conds, "status", "conditions"); err != nil {
		t.Fatal(err)
	}
}
