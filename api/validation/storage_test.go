package validation

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func persistence(size string, class *string) func(c *v1alpha1.ValkeyCluster) {
	return func(c *v1alpha1.ValkeyCluster) {
		c.Spec.Persistence = &v1alpha1.PersistenceSpec{Size: resource.MustParse(size), StorageClassName: class}
	}
}

func TestValidatePersistence(t *testing.T) {
	runClusterCases(t, []clusterCase{
		{name: "size only", mutate: persistence("1Gi", nil)},
		{name: "with class and policy", mutate: func(c *v1alpha1.ValkeyCluster) {
			persistence("10Gi", ptr.To("gp3"))(c)
			c.Spec.Persistence.ReclaimPolicy = v1alpha1.ReclaimDelete
		}},
		{name: "empty class (no dynamic provisioning)", mutate: persistence("1Gi", ptr.To(""))},
		{name: "unset workload type is StatefulSet", mutate: func(c *v1alpha1.ValkeyCluster) {
			persistence("1Gi", nil)(c)
			c.Spec.WorkloadType = ""
		}},
		{name: "with Deployment", mutate: func(c *v1alpha1.ValkeyCluster) {
			persistence("1Gi", nil)(c)
			c.Spec.WorkloadType = v1alpha1.WorkloadDeployment
		}, want: []string{"spec.persistence: Forbidden: persistence requires workloadType StatefulSet (workloadType is Deployment)"}},
		{name: "with Pod", mutate: func(c *v1alpha1.ValkeyCluster) {
			persistence("1Gi", nil)(c)
			c.Spec.WorkloadType = v1alpha1.WorkloadPod
		}, want: []string{"spec.persistence: Forbidden"}},
		{name: "zero size", mutate: persistence("0", nil),
			want: []string{`spec.persistence.size: Invalid value: "0": must be greater than zero`}},
		{name: "negative size", mutate: persistence("-1Gi", nil), want: []string{"spec.persistence.size"}},
		{name: "unknown reclaim policy", mutate: func(c *v1alpha1.ValkeyCluster) {
			persistence("1Gi", nil)(c)
			c.Spec.Persistence.ReclaimPolicy = "Recycle"
		}, want: []string{`spec.persistence.reclaimPolicy: Unsupported value: "Recycle": supported values: "Retain", "Delete"`}},
		{name: "invalid class name", mutate: persistence("1Gi", ptr.To("Fast SSD")),
			want: []string{"spec.persistence.storageClassName: Invalid value"}},
	})
}

func TestValidatePersistenceUpdate(t *testing.T) {
	runUpdateCases(t, []updateCase{
		{name: "unchanged", mutateOld: persistence("1Gi", ptr.To("gp3")), mutateNew: persistence("1Gi", ptr.To("gp3"))},
		{name: "grows", mutateOld: persistence("1Gi", nil), mutateNew: persistence("2Gi", nil)},
		{name: "same size in other units", mutateOld: persistence("1Gi", nil), mutateNew: persistence("1024Mi", nil)},
		{name: "reclaim policy changes", mutateOld: persistence("1Gi", nil), mutateNew: func(c *v1alpha1.ValkeyCluster) {
			persistence("1Gi", nil)(c)
			c.Spec.Persistence.ReclaimPolicy = v1alpha1.ReclaimDelete
		}},
		{name: "added", mutateNew: persistence("1Gi", nil),
			want: []string{"spec.persistence: Forbidden: persistence cannot be added after creation"}},
		{name: "removed", mutateOld: persistence("1Gi", nil),
			want: []string{"spec.persistence: Forbidden: persistence cannot be removed after creation"}},
		{name: "shrinks", mutateOld: persistence("2Gi", nil), mutateNew: persistence("1Gi", nil),
			want: []string{`spec.persistence.size: Invalid value: "1Gi": can only grow (was 2Gi)`}},
		{name: "class changes", mutateOld: persistence("1Gi", ptr.To("gp2")), mutateNew: persistence("1Gi", ptr.To("gp3")),
			want: []string{`spec.persistence.storageClassName: Invalid value: "gp3": is immutable (was "gp2")`}},
		{name: "class set", mutateOld: persistence("1Gi", nil), mutateNew: persistence("1Gi", ptr.To("gp3")),
			want: []string{"spec.persistence.storageClassName", "is immutable (was unset)"}},
		{name: "class unset", mutateOld: persistence("1Gi", ptr.To("gp3")), mutateNew: persistence("1Gi", nil),
			want: []string{"spec.persistence.storageClassName"}},
	})
}
