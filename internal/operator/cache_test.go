package operator

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func labelled(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "tenant", UID: "u1", ResourceVersion: "7",
		Labels: map[string]string{"app.kubernetes.io/managed-by": "valkey-operator", "valkey.io/node": "vk-abcde"}}
}

// size is the protobuf size of a cached object.
func size(t *testing.T, o any) int {
	t.Helper()
	s, ok := o.(interface{ Size() int })
	if !ok {
		t.Fatalf("%T has no Size", o)
	}
	return s.Size()
}

func TestTrimBoundsWhatATenantCreates(t *testing.T) {
	big := strings.Repeat("x", 900<<10)
	bigPod := &corev1.Pod{ObjectMeta: labelled("p")}
	bigPod.Annotations = map[string]string{"note": strings.Repeat("a", 200<<10), "valkey.io/huge": strings.Repeat("b", 200<<10)}
	for range 200 {
		bigPod.Spec.Containers = append(bigPod.Spec.Containers, corev1.Container{Name: "c", Image: "i",
			Env: []corev1.EnvVar{{Name: "E", Value: strings.Repeat("e", 1<<10)}}})
	}
	bigPod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Message: big}}
	bigSts := &appsv1.StatefulSet{ObjectMeta: labelled("s")}
	bigSts.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Args: []string{big}}}
	bigSvc := &corev1.Service{ObjectMeta: labelled("svc")}
	for i := range 1000 {
		bigSvc.Spec.Ports = append(bigSvc.Spec.Ports, corev1.ServicePort{Name: "p", Port: int32(i + 1)})
	}
	for _, tc := range []struct {
		name string
		in   client.Object
	}{
		{"a Secret of 900 KiB", &corev1.Secret{ObjectMeta: labelled("s"), Data: map[string][]byte{"k": []byte(big)}}},
		{"a ConfigMap of 900 KiB", &corev1.ConfigMap{ObjectMeta: labelled("c"), Data: map[string]string{"k": big}}},
		{"a pod with 400 KiB of annotations, 200 containers and a long condition", bigPod},
		{"a StatefulSet with a 900 KiB template", bigSts},
		{"a Service with 1000 ports", bigSvc},
		{"a Secret's metadata", &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"note": big}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Trim(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if n := size(t, out); n > 16<<10 {
				t.Errorf("kept %d KiB, want at most 16 KiB", n>>10)
			}
			o := out.(client.Object)
			if o.GetName() != tc.in.GetName() || o.GetResourceVersion() != tc.in.GetResourceVersion() {
				t.Errorf("kept %s at %s, want the object's name and version", o.GetName(), o.GetResourceVersion())
			}
		})
	}
}

func TestTrimKeepsWhatTheControllersRead(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: labelled("vk-abcde-0")}
	pod.Annotations = map[string]string{"valkey.io/refresh-mounts": "2026-12-05T10:00:00Z+1", "kubectl.kubernetes.io/last-applied-configuration": "{}"}
	pod.OwnerReferences = []metav1.OwnerReference{{Kind: "StatefulSet", Name: "vk-abcde", Controller: ptr.To(true)}}
	pod.Spec = corev1.PodSpec{NodeName: "node-1", RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "server", Image: "valkey:8.0", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}}}
	exited := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Signal: 9, Reason: "Error", Message: "done"}}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.7",
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "server", RestartCount: 2, LastTerminationState: exited, Ready: true}}}
	out, _ := Trim(pod.DeepCopy())
	got := out.(*corev1.Pod)
	if got.Spec.NodeName != "node-1" || got.Spec.RestartPolicy != corev1.RestartPolicyNever || got.Status.PodIP != "10.0.0.7" ||
		got.Status.Phase != corev1.PodRunning || len(got.Status.Conditions) != 1 ||
		got.Status.ContainerStatuses[0].LastTerminationState.Terminated.ExitCode != 137 || got.Status.ContainerStatuses[0].RestartCount != 2 {
		t.Errorf("trimmed pod lost what the node-controller reads: %+v", got)
	}
	if got.Annotations["valkey.io/refresh-mounts"] == "" || len(got.Annotations) != 1 || len(got.Spec.Containers[0].Env) != 0 {
		t.Errorf("annotations %v, env %v: want the operator's annotation only and no env", got.Annotations, got.Spec.Containers[0].Env)
	}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].Name != "vk-abcde" {
		t.Errorf("owner references lost: %v", got.OwnerReferences)
	}

	sts := &appsv1.StatefulSet{ObjectMeta: labelled("vk-abcde")}
	sts.Annotations = map[string]string{"valkey.io/revision": "3", "valkey.io/pod-template-hash": "h1"}
	sts.Spec.Replicas = ptr.To[int32](1)
	sts.Spec.Template.Annotations = map[string]string{"valkey.io/pod-template-hash": "h1"}
	sts.Spec.Template.Spec.Containers = []corev1.Container{{Name: "server"}}
	sts.Status.ReadyReplicas = 1
	out, _ = Trim(sts)
	gs := out.(*appsv1.StatefulSet)
	if gs.Annotations["valkey.io/revision"] != "3" || gs.Spec.Template.Annotations["valkey.io/pod-template-hash"] != "h1" ||
		*gs.Spec.Replicas != 1 || gs.Status.ReadyReplicas != 1 || len(gs.Spec.Template.Spec.Containers) != 0 {
		t.Errorf("trimmed StatefulSet: %+v", gs)
	}

	svc := &corev1.Service{ObjectMeta: labelled("vk")}
	svc.Labels["team"] = "cache"
	svc.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"a": "b"},
		Ports: []corev1.ServicePort{{Name: "valkey", Port: 6379}}, PublishNotReadyAddresses: true}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
	out, _ = Trim(svc)
	gsv := out.(*corev1.Service)
	if gsv.Labels["team"] != "cache" || gsv.Spec.Ports[0].Port != 6379 || !gsv.Spec.PublishNotReadyAddresses ||
		gsv.Status.LoadBalancer.Ingress[0].IP != "192.0.2.1" || gsv.Spec.Selector["a"] != "b" {
		t.Errorf("trimmed Service: %+v", gsv)
	}
}

func TestTrimStubs(t *testing.T) {
	np := stub(&corev1.Secret{ObjectMeta: labelled("s")})
	if np.GetLabels() != nil || np.GetAnnotations()[AnnotationCacheStub] == "" || np.GetName() != "s" {
		t.Errorf("stub: %+v", np)
	}
	if _, ok := np.(*corev1.Secret); !ok {
		t.Errorf("stub of a Secret is a %T", np)
	}
}

func TestBounded(t *testing.T) {
	small := &corev1.ConfigMap{ObjectMeta: labelled("small")}
	if got := Bounded(small); got != small {
		t.Errorf("a small object is kept as it is: %+v", got)
	}
	big := &corev1.ConfigMap{ObjectMeta: labelled("big"), Data: map[string]string{"k": strings.Repeat("x", maxCachedObject)}}
	got := Bounded(big)
	if got.GetAnnotations()[AnnotationCacheStub] == "" || got.GetLabels() != nil || got.(*corev1.ConfigMap).Data != nil {
		t.Errorf("an object larger than %d bytes of JSON is a stub: %+v", maxCachedObject, got)
	}
}
