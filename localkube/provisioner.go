package localkube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

// hostPathProvisioner makes one host folder per volume under VolumesDir. Every node sees
// the host's file system, so a volume follows its pod to any node, like network storage.
type hostPathProvisioner struct{ dir string }

var _ controller.Provisioner = hostPathProvisioner{}

func (p hostPathProvisioner) Provision(_ context.Context, o controller.ProvisionOptions) (*corev1.PersistentVolume, controller.ProvisioningState, error) {
	path := filepath.Join(p.dir, o.PVName)
	if err := os.MkdirAll(path, 0o777); err != nil {
		return nil, controller.ProvisioningFinished, fmt.Errorf("create %s: %w", path, err)
	}
	// Pods run as non-root users; the folder must be writable by them.
	if err := os.Chmod(path, 0o777); err != nil {
		return nil, controller.ProvisioningFinished, err
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if o.StorageClass.ReclaimPolicy != nil {
		reclaim = *o.StorageClass.ReclaimPolicy
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: o.PVName},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: reclaim,
			AccessModes:                   o.PVC.Spec.AccessModes,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: o.PVC.Spec.Resources.Requests[corev1.ResourceStorage]},
			VolumeMode:                    o.PVC.Spec.VolumeMode,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: path, Type: ptr.To(corev1.HostPathDirectoryOrCreate)},
			},
		},
	}, controller.ProvisioningFinished, nil
}

func (p hostPathProvisioner) Delete(_ context.Context, pv *corev1.PersistentVolume) error {
	if pv.Spec.HostPath == nil || filepath.Dir(pv.Spec.HostPath.Path) != p.dir {
		return &controller.IgnoredError{Reason: "not a volume of this provisioner"}
	}
	return os.RemoveAll(pv.Spec.HostPath.Path)
}

// RunProvisioner serves the default StorageClass and the local load balancer
// (loadbalancer.go) until ctx ends: it provisions host-folder volumes and grows them when
// a claim asks for more (a host folder has no size to change, so growing means recording
// the new capacity on the volume and the claim, as a CSI resizer with online expansion
// would).
func RunProvisioner(ctx context.Context, c Config) error {
	c, err := c.WithDefaults()
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.path("kubeconfigs", "provisioner.kubeconfig"))
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	go runLoadBalancer(ctx, cs, c.nodes())
	return ServeVolumes(ctx, cs, c.path("volumes"))
}

// ServeVolumes is the provisioner of RunProvisioner for any cluster whose nodes all see
// the host folder dir at the same path (the kind provider mounts it into every node):
// it creates the default StorageClass, then provisions and grows volumes until ctx ends.
func ServeVolumes(ctx context.Context, cs kubernetes.Interface, dir string) error {
	if err := ensureStorageClass(ctx, cs); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pc := controller.NewProvisionController(ctx, cs, Provisioner, hostPathProvisioner{dir: dir},
		controller.LeaderElection(false), controller.Threadiness(4), controller.ResyncPeriod(30*time.Second))
	go runResizer(ctx, cs)
	pc.Run(ctx)
	return nil
}

func ensureStorageClass(ctx context.Context, cs kubernetes.Interface) error {
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        StorageClass,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:          Provisioner,
		ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode:    ptr.To(storagev1.VolumeBindingImmediate),
		AllowVolumeExpansion: ptr.To(true),
	}
	return waitFor(ctx, time.Minute, 200*time.Millisecond, "create StorageClass", func() (bool, error) {
		_, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), err
	})
}

// runResizer grows bound volumes of our class whose claim asks for more than it has.
func runResizer(ctx context.Context, cs kubernetes.Interface) {
	f := informers.NewSharedInformerFactory(cs, 30*time.Second)
	inf := f.Core().V1().PersistentVolumeClaims().Informer()
	handle := func(obj any) {
		if pvc, ok := obj.(*corev1.PersistentVolumeClaim); ok {
			if err := resize(ctx, cs, pvc); err != nil {
				fmt.Fprintf(os.Stderr, "resize %s/%s: %v\n", pvc.Namespace, pvc.Name, err)
			}
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
	})
	f.Start(ctx.Done())
	<-ctx.Done()
}

func resize(ctx context.Context, cs kubernetes.Interface, pvc *corev1.PersistentVolumeClaim) error {
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		return nil
	}
	want := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	have := pvc.Status.Capacity[corev1.ResourceStorage]
	if want.Cmp(have) <= 0 {
		return nil
	}
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if pv.Spec.HostPath == nil || pv.Annotations["pv.kubernetes.io/provisioned-by"] != Provisioner {
		return nil
	}
	if cur := pv.Spec.Capacity[corev1.ResourceStorage]; want.Cmp(cur) > 0 {
		patch := fmt.Sprintf(`{"spec":{"capacity":{"storage":%q}}}`, want.String())
		if _, err := cs.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return err
		}
	}
	status := fmt.Sprintf(`{"status":{"capacity":{"storage":%q},"allocatedResources":{"storage":%q},"conditions":null,"allocatedResourceStatuses":null}}`, want.String(), want.String())
	_, err = cs.CoreV1().PersistentVolumeClaims(pvc.Namespace).Patch(ctx, pvc.Name, types.MergePatchType, []byte(status), metav1.PatchOptions{}, "status")
	return err
}
