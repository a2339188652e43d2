package certs

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/statemetrics"
)

var (
	descExpiry = statemetrics.Desc("tls_certificate_expiry_timestamp_seconds",
		"When the certificate the cluster's members serve (status.tls.notAfter) expires, in Unix seconds: minus time() it is the seconds left.",
		"namespace", "cluster")
	descApplied = statemetrics.Desc("tls_certificate_applied",
		"1 when the member serves the cluster's current certificate revision (its TLSApplied condition is True).",
		statemetrics.MemberLabels...)
)

// NewCollector returns the tls-controller's metrics, read from the status it wrote.
func NewCollector(r client.Reader) prometheus.Collector {
	return &statemetrics.Collector{Reader: r, Descs: []*prometheus.Desc{descExpiry, descApplied}, Gather: gather}
}

func gather(ctx context.Context, r client.Reader, emit statemetrics.Emit) error {
	var vcs v1alpha1.ValkeyClusterList
	if err := r.List(ctx, &vcs); err != nil {
		return err
	}
	tlsOn := map[string]bool{}
	for _, vc := range vcs.Items {
		if vc.Spec.TLS == nil || vc.Status.TLS == nil || vc.Status.TLS.NotAfter.IsZero() {
			continue
		}
		tlsOn[vc.Namespace+"/"+vc.Name] = true
		emit(descExpiry, statemetrics.Timestamp(vc.Status.TLS.NotAfter.Time), vc.Namespace, vc.Name)
	}
	return statemetrics.MemberCondition(ctx, r, emit, descApplied, v1alpha1.ConditionTLSApplied, func(vn *v1alpha1.ValkeyNode) bool {
		return tlsOn[vn.Namespace+"/"+vn.Spec.ClusterName]
	})
}
