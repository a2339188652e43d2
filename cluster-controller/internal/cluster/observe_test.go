package cluster

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func TestUnobservable(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status}
	}
	cases := []struct {
		name  string
		ip    string
		conds []metav1.Condition
		want  string
	}{
		{"a ready pod whose server answers", "10.0.0.1", []metav1.Condition{cond(v1alpha1.ConditionPodReady, metav1.ConditionTrue), cond(v1alpha1.ConditionServerDown, metav1.ConditionFalse)}, ""},
		{"no address yet", "", []metav1.Condition{cond(v1alpha1.ConditionPodReady, metav1.ConditionTrue)}, "pod not ready"},
		{"a pod not ready", "10.0.0.1", []metav1.Condition{cond(v1alpha1.ConditionPodReady, metav1.ConditionFalse)}, "pod not ready"},
		{"a pod still ready whose server is proven down: not dialled", "10.0.0.1", []metav1.Condition{cond(v1alpha1.ConditionPodReady, metav1.ConditionTrue), cond(v1alpha1.ConditionServerDown, metav1.ConditionTrue)}, "server down"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vn := &v1alpha1.ValkeyNode{}
			vn.Status.PodIP = c.ip
			vn.Status.Conditions = c.conds
			got := ""
			if err := unobservable(vn); err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Errorf("unobservable = %q, want %q", got, c.want)
			}
		})
	}
}
