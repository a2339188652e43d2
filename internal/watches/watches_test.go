package watches

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func TestOperatorSecretOf(t *testing.T) {
	secret := func(name string, labels map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: labels}}
	}
	ours := map[string]string{v1alpha1.LabelInstance: "c", v1alpha1.LabelManagedBy: v1alpha1.ManagedBy}
	for _, tc := range []struct {
		name   string
		secret *corev1.Secret
		want   bool
	}{
		{"the cluster's copy", secret(v1alpha1.TLSSecretName("c"), ours), true},
		{"its system users", secret(v1alpha1.SystemUsersSecretName("c"), ours), true},
		{"another name", secret("c-something", ours), false},
		{"not made by the operator", secret(v1alpha1.TLSSecretName("c"), map[string]string{v1alpha1.LabelInstance: "c"}), false},
		{"no cluster label", secret(v1alpha1.TLSSecretName("c"), map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy}), false},
	} {
		got := OperatorSecretOf(tc.secret, v1alpha1.TLSSecretName, v1alpha1.SystemUsersSecretName)
		if (len(got) == 1 && got[0] == Request("ns", "c")) != tc.want || len(got) > 1 {
			t.Errorf("%s: OperatorSecretOf = %v, want a request for ns/c: %v", tc.name, got, tc.want)
		}
	}
}

func TestPausedChanged(t *testing.T) {
	cluster := func(paused metav1.ConditionStatus) *v1alpha1.ValkeyCluster {
		vc := &v1alpha1.ValkeyCluster{}
		if paused != "" {
			vc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionPaused, Status: paused}}
		}
		return vc
	}
	p := PausedChanged()
	for _, tc := range []struct {
		name     string
		old, new *v1alpha1.ValkeyCluster
		want     bool
	}{
		{"paused", cluster(metav1.ConditionFalse), cluster(metav1.ConditionTrue), true},
		{"resumed", cluster(metav1.ConditionTrue), cluster(metav1.ConditionFalse), true},
		{"first report, not paused", cluster(""), cluster(metav1.ConditionFalse), false},
		{"still paused", cluster(metav1.ConditionTrue), cluster(metav1.ConditionTrue), false},
	} {
		if got := p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: PausedChanged = %v, want %v", tc.name, got, tc.want)
		}
	}
}
