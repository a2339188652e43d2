//go:build e2e

package localkube

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// The StatefulSet of this feature: one Valkey server whose /data is a claim of the
// default StorageClass.
const (
	stsName   = "data"
	claimName = "data-data-0" // <template>-<statefulset>-<ordinal>
	podName   = "data-0"
)

var (
	initialSize = resource.MustParse("64Mi")
	grownSize   = resource.MustParse("128Mi")
)

func TestStorage(t *testing.T) {
	f := framework.NewFeature(suite, "persistent volumes").
		Setup(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns := framework.Namespace(ctx)
			must(t, k.Client.Create(ctx, dataStatefulSet(ns, valkeyImage(t, k))), "create StatefulSet")
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName}}
			start := time.Now()
			must(t, framework.WaitFor(ctx, k.Client, pod, podTimeout, "become Ready", framework.PodReady), "StatefulSet pod")
			t.Logf("timing: %s Ready with its new volume %s after create", podName, since(start))
			return ctx
		}).
		Assess("a key written before the pod is deleted is read from its replacement", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns := framework.Namespace(ctx)
			old := &corev1.Pod{}
			must(t, k.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: podName}, old), "get pod")
			must(t, writeAndSave(ctx, framework.PodAddr(old), "persisted", old.Name), "write key")

			start := time.Now()
			must(t, k.Client.Delete(ctx, old), "delete pod")
			fresh := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName}}
			err := framework.WaitFor(ctx, k.Client, fresh, podTimeout, "be replaced and Ready", func(p *corev1.Pod) (bool, string) {
				if p.UID == old.UID {
					return false, "still the old pod: " + framework.DescribePod(p)
				}
				return framework.PodReady(p)
			})
			must(t, err, "replacement pod")
			t.Logf("timing: replacement pod Ready on %s %s after the delete", fresh.Spec.NodeName, since(start))

			got, err := readKey(ctx, framework.PodAddr(fresh), "persisted")
			must(t, err, "read key from the replacement")
			if got != old.Name {
				t.Errorf("key persisted = %q after the pod was replaced, want %q", got, old.Name)
			}
			return ctx
		}).
		Assess("growing the claim's request grows its capacity", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: framework.Namespace(ctx), Name: claimName}}
			must(t, framework.WaitFor(ctx, k.Client, pvc, podTimeout, "be Bound", claimBound), "claim")
			if c := pvc.Status.Capacity[corev1.ResourceStorage]; c.Cmp(initialSize) != 0 {
				t.Fatalf("claim capacity %s, want %s", c.String(), initialSize.String())
			}
			patch := client.MergeFrom(pvc.DeepCopy())
			pvc.Spec.Resources.Requests[corev1.ResourceStorage] = grownSize
			start := time.Now()
			must(t, k.Client.Patch(ctx, pvc, patch), "grow the claim")
			err := framework.WaitFor(ctx, k.Client, pvc, podTimeout, "have capacity "+grownSize.String(), func(c *corev1.PersistentVolumeClaim) (bool, string) {
				got := c.Status.Capacity[corev1.ResourceStorage]
				return got.Cmp(grownSize) == 0, "capacity " + got.String()
			})
			must(t, err, "claim capacity")
			t.Logf("timing: claim capacity %s %s after the request grew", grownSize.String(), since(start))
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// dataStatefulSet is one Valkey server keeping its data in /data on a claim of the
// default StorageClass.
func dataStatefulSet(ns, image string) *appsv1.StatefulSet {
	labels := map[string]string{"app": stsName}
	c := valkeyContainer(image, "--dir", "/data")
	c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: stsName},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](1),
			ServiceName: stsName,
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{c}, TerminationGracePeriodSeconds: ptr.To[int64](valkeyGrace)},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: initialSize}},
				},
			}},
		},
	}
}

// claimBound is a WaitFor condition: the claim is Bound.
func claimBound(c *corev1.PersistentVolumeClaim) (bool, string) {
	return c.Status.Phase == corev1.ClaimBound, "phase " + string(c.Status.Phase)
}

// writeAndSave sets a key and saves the dataset to disk (SAVE writes dump.rdb in /data).
func writeAndSave(ctx context.Context, addr, key, value string) error {
	c, err := framework.ValkeyClient(addr, pingTimeout)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Do(ctx, c.B().Set().Key(key).Value(value).Build()).Error(); err != nil {
		return err
	}
	return c.Do(ctx, c.B().Save().Build()).Error()
}

// readKey gets a key.
func readKey(ctx context.Context, addr, key string) (string, error) {
	c, err := framework.ValkeyClient(addr, pingTimeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.Do(ctx, c.B().Get().Key(key).Build()).ToString()
}
