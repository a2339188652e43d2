package certs

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/testsuite"
)

func TestCollector(t *testing.T) {
	notAfter := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	withTLS := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tls"}}
	withTLS.Spec.TLS = &v1alpha1.TLSSpec{Certificate: &v1alpha1.CertificateSpec{SecretName: "cert"}}
	withTLS.Status.TLS = &v1alpha1.TLSStatus{NotAfter: metav1.NewTime(notAfter)}
	plain := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain"}}
	member := func(name, cluster string, applied metav1.ConditionStatus) *v1alpha1.ValkeyNode {
		vn := &v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		vn.Spec.ClusterName, vn.Spec.ShardIndex = cluster, 1
		vn.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionTLSApplied, Status: applied}}
		return vn
	}
	c := testsuite.FakeClient(withTLS, plain, member("tls-a", "tls", metav1.ConditionTrue), member("tls-b", "tls", metav1.ConditionFalse),
		member("plain-a", "plain", metav1.ConditionTrue))
	want := `
# HELP valkey_operator_tls_certificate_applied 1 when the member serves the cluster's current certificate revision (its TLSApplied condition is True).
# TYPE valkey_operator_tls_certificate_applied gauge
valkey_operator_tls_certificate_applied{cluster="tls",member="tls-a",namespace="ns",shard="1"} 1
valkey_operator_tls_certificate_applied{cluster="tls",member="tls-b",namespace="ns",shard="1"} 0
# HELP valkey_operator_tls_certificate_expiry_timestamp_seconds When the certificate the cluster's members serve (status.tls.notAfter) expires, in Unix seconds: minus time() it is the seconds left.
# TYPE valkey_operator_tls_certificate_expiry_timestamp_seconds gauge
valkey_operator_tls_certificate_expiry_timestamp_seconds{cluster="tls",namespace="ns"} 1.798761600e+09
`
	if err := testutil.CollectAndCompare(NewCollector(c), strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
