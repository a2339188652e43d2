package node

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func TestBuildClaim(t *testing.T) {
	vn := testNode(withPersistence("10Gi", v1alpha1.ReclaimDelete))
	pvc := buildClaim(vn)
	if pvc.Name != "demo-x7k2p-data" || *pvc.Spec.StorageClassName != "standard" ||
		pvc.Spec.Resources.Requests.Storage().String() != "10Gi" || pvc.Spec.AccessModes[0] != corev1.ReadWriteOnce {
		t.Errorf("claim = %+v", pvc)
	}
	if pvc.Labels[v1alpha1.LabelNode] != vn.Name {
		t.Error("the claim is not labelled with its node (the watch maps it by that label)")
	}
	if !usesClaim(vn) || usesClaim(testNode()) || usesClaim(testNode(withPersistence("1Gi", ""), withWorkload(v1alpha1.WorkloadDeployment))) {
		t.Error("usesClaim is wrong")
	}
	if !ownsClaim(vn) || ownsClaim(testNode(withPersistence("1Gi", ""))) || ownsClaim(testNode(withPersistence("1Gi", v1alpha1.ReclaimRetain))) {
		t.Error("the claim is owned only with reclaimPolicy Delete")
	}
}

func TestStorageCondition(t *testing.T) {
	claim := func(phase corev1.PersistentVolumeClaimPhase, req, capacity string, mutate ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "c"},
			Spec:       corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(req)}}},
			Status:     corev1.PersistentVolumeClaimStatus{Phase: phase},
		}
		if capacity != "" {
			pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}
		}
		for _, m := range mutate {
			m(pvc)
		}
		return pvc
	}
	cases := []struct {
		name   string
		st     storageState
		ok     bool
		reason string
		msg    string
	}{
		{"no persistence", storageState{}, true, v1alpha1.ReasonStorageNotUsed, "emptyDir"},
		{"claim being created", storageState{used: true}, false, v1alpha1.ReasonStoragePending, "being created"},
		{"claim pending", storageState{used: true, claim: claim("", "1Gi", "")}, false, v1alpha1.ReasonStoragePending, "claim c is Pending"},
		{"claim bound", storageState{used: true, claim: claim(corev1.ClaimBound, "1Gi", "1Gi")}, true, v1alpha1.ReasonStorageBound, "bound with 1Gi"},
		{"claim growing", storageState{used: true, claim: claim(corev1.ClaimBound, "2Gi", "1Gi")}, false, v1alpha1.ReasonStorageResizing, "grows from 1Gi to 2Gi"},
		{
			"file system pending",
			storageState{used: true, claim: claim(corev1.ClaimBound, "2Gi", "1Gi", func(p *corev1.PersistentVolumeClaim) {
				p.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue}}
			})},
			false, v1alpha1.ReasonStorageResizing, "file system grows",
		},
		{"class cannot expand", storageState{used: true, claim: claim(corev1.ClaimBound, "1Gi", "1Gi"), infeasible: "StorageClass x does not allow volume expansion"}, false, v1alpha1.ReasonResizeInfeasible, "does not allow"},
		{
			"driver refused",
			storageState{used: true, claim: claim(corev1.ClaimBound, "2Gi", "1Gi", func(p *corev1.PersistentVolumeClaim) {
				p.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimControllerResizeInfeasible}
				p.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimControllerResizeError, Status: corev1.ConditionTrue, Message: "quota"}}
			})},
			false, v1alpha1.ReasonResizeInfeasible, "cannot resize claim c: quota",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := storageCondition(tc.st, 4)
			if (c.Status == metav1.ConditionTrue) != tc.ok || c.Reason != tc.reason || !strings.Contains(c.Message, tc.msg) || c.ObservedGeneration != 4 {
				t.Errorf("StorageReady = %s %s %q, want %v %s ~%q", c.Status, c.Reason, c.Message, tc.ok, tc.reason, tc.msg)
			}
		})
	}
}
