package operator

import (
	"encoding/json"
	"reflect"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What the components keep in memory of the objects they watch.
//
// A namespace user can create any object in their namespace, with any labels (the
// operator's own app.kubernetes.io/managed-by among them) and up to the API server's
// size limits. The label keeps the caches to objects that claim to be the operator's,
// and the rules below bound what each one costs, whoever made it:
//
//   - Secrets and ConfigMaps are watched as metadata only, reduced to what a watch maps
//     (name, the operator's labels, owner references). Their content is read by name
//     from the API server when a reconciler asks for one, and kept, until it changes or
//     goes, for those names only (ContentCache): the names the controllers derive from
//     their own ValkeyClusters and ValkeyNodes, so a tenant's data never stays in memory.
//   - Pods, claims, StatefulSets, Deployments, Services, budgets, NetworkPolicies and
//     Jobs are copied field by field into objects that hold only what the controllers
//     read (trimmers below), with every list and message capped; metadata keeps the
//     operator's valkey.io/ annotations only (none is longer than maxAnnotation).
//   - Whatever remains larger than maxCachedObject is replaced by a stub that names the
//     object and nothing else: the operator's own objects are far smaller (the trim
//     tests check the objects the controllers build), so only a stranger's can be.
//   - Every other type (the operator's CRDs, StorageClasses, nodes) loses its managed
//     fields and is otherwise kept whole: ValkeyClusters are bounded by admission (their
//     caps), the rest is the platform's.
//
// Objects the cache trims are never written back whole: the controllers patch or apply
// them, and an update that needs the whole object reads it from the API server first.

// Bounds of the trimmed copies.
const (
	// maxCachedObject is the largest object a cache keeps, in its protobuf size.
	maxCachedObject = 32 << 10
	// maxAnnotation is the longest annotation value kept.
	maxAnnotation = 4 << 10
	// maxLabels is the most labels kept whole; beyond, only the operator's own.
	maxLabels = 64
	// maxItems caps the lists of a trimmed object (containers, conditions, ports, ...).
	maxItems = 16
	// maxMessage caps a condition's or status message.
	maxMessage = 4 << 10
	// maxOwners caps the owner references kept.
	maxOwners = 8
)

// AnnotationCacheStub marks a stub: the object was too large to be the operator's.
const AnnotationCacheStub = "valkey.io/cache-stub"

// CacheOptions are the cache settings of every component: selection by the operator's
// label and trimming for the types a tenant can create, managed fields stripped for all.
// Components may watch any subset of these types; a type not watched costs nothing.
func CacheOptions(namespaces []string) cache.Options {
	opts := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         map[client.Object]cache.ByObject{},
	}
	for _, obj := range []client.Object{
		&corev1.Secret{}, &corev1.ConfigMap{}, &corev1.Pod{}, &corev1.PersistentVolumeClaim{},
		&appsv1.StatefulSet{}, &appsv1.Deployment{}, &corev1.Service{}, &policyv1.PodDisruptionBudget{},
		&networkingv1.NetworkPolicy{}, &batchv1.Job{},
	} {
		opts.ByObject[obj] = cache.ByObject{Label: ManagedBySelector(), Transform: Trim}
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}

// Trim is the cache transform of the types a tenant can create (see above).
func Trim(in any) (any, error) {
	var out client.Object
	switch o := in.(type) {
	case *metav1.PartialObjectMetadata:
		out = &metav1.PartialObjectMetadata{TypeMeta: o.TypeMeta, ObjectMeta: trimMeta(o.ObjectMeta)}
		out.SetAnnotations(nil) // a metadata watch maps by name, labels and owners
	case *corev1.Pod:
		out = trimPod(o)
	case *corev1.PersistentVolumeClaim:
		out = trimClaim(o)
	case *appsv1.StatefulSet:
		out = trimStatefulSet(o)
	case *appsv1.Deployment:
		out = trimDeployment(o)
	case *corev1.Service:
		out = trimService(o)
	case *policyv1.PodDisruptionBudget:
		out = &policyv1.PodDisruptionBudget{TypeMeta: o.TypeMeta, ObjectMeta: trimMeta(o.ObjectMeta),
			Spec: o.Spec, Status: policyv1.PodDisruptionBudgetStatus{
				ObservedGeneration: o.Status.ObservedGeneration, DisruptionsAllowed: o.Status.DisruptionsAllowed,
				CurrentHealthy: o.Status.CurrentHealthy, DesiredHealthy: o.Status.DesiredHealthy,
				ExpectedPods: o.Status.ExpectedPods, Conditions: trimConditions(o.Status.Conditions),
			}}
	case *networkingv1.NetworkPolicy:
		out = &networkingv1.NetworkPolicy{TypeMeta: o.TypeMeta, ObjectMeta: trimMeta(o.ObjectMeta), Spec: o.Spec}
	case *batchv1.Job:
		out = trimJob(o)
	case *corev1.Secret, *corev1.ConfigMap:
		// Only ever cached as metadata (ContentCache); a typed watch would keep content.
		return stub(o.(client.Object)), nil
	default:
		return in, nil
	}
	if s, ok := out.(interface{ Size() int }); ok && s.Size() > maxCachedObject {
		return stub(out), nil
	}
	return out, nil
}

// TrimMeta keeps what the controllers read of an object's metadata, as the caches of
// the types above keep it: for the transform of a component that caches another
// project's types (the tls-controller's cert-manager objects).
func TrimMeta(m metav1.ObjectMeta) metav1.ObjectMeta { return trimMeta(m) }

// CapMessage caps a condition's or status message as the caches of the types above do.
func CapMessage(s string) string { return capString(s) }

// Bounded returns o, or a stub of it when its JSON is larger than a cache keeps
// (maxCachedObject), for types without a protobuf size: the operator's own objects are
// far smaller, so only a stranger's can be.
func Bounded(o client.Object) client.Object {
	if b, err := json.Marshal(o); err != nil || len(b) > maxCachedObject {
		return stub(o)
	}
	return o
}

// trimMeta keeps what the controllers read of an object's metadata.
func trimMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, CreationTimestamp: m.CreationTimestamp,
		DeletionTimestamp: m.DeletionTimestamp, DeletionGracePeriodSeconds: m.DeletionGracePeriodSeconds,
		Labels: trimLabels(m.Labels), Annotations: ownAnnotations(m.Annotations),
		OwnerReferences: m.OwnerReferences, Finalizers: m.Finalizers,
	}
	if len(out.OwnerReferences) > maxOwners {
		out.OwnerReferences = nil
		if c := metav1.GetControllerOfNoCopy(&m); c != nil {
			out.OwnerReferences = []metav1.OwnerReference{*c}
		}
	}
	if len(out.Finalizers) > maxItems {
		out.Finalizers = out.Finalizers[:maxItems]
	}
	return out
}

// ownLabel reports whether a label key is one the operator or Kubernetes' own
// controllers set on the objects the operator watches.
func ownLabel(k string) bool {
	for _, p := range []string{"app.kubernetes.io/", "valkey.io/", "batch.kubernetes.io/", "statefulset.kubernetes.io/", "apps.kubernetes.io/"} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return k == "controller-revision-hash" || k == "pod-template-hash" || k == "job-name" || k == "controller-uid"
}

// trimLabels keeps every label of an object with few (users' labels on the operator's
// Services are compared with the spec), and only the operator's of one with many.
func trimLabels(l map[string]string) map[string]string {
	if len(l) <= maxLabels {
		return l
	}
	out := map[string]string{}
	for k, v := range l {
		if ownLabel(k) {
			out[k] = v
		}
	}
	return out
}

// ownAnnotations keeps the operator's annotations (valkey.io/), each short.
func ownAnnotations(a map[string]string) map[string]string {
	var out map[string]string
	for k, v := range a {
		if strings.HasPrefix(k, "valkey.io/") && len(v) <= maxAnnotation {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

func capped[T any](s []T) []T {
	if len(s) > maxItems {
		return s[:maxItems]
	}
	return s
}

func capString(s string) string {
	if len(s) > maxMessage {
		return s[:maxMessage]
	}
	return s
}

// capConditions caps a list of conditions of any type and the message of each, which
// message points at.
func capConditions[C any](cs []C, message func(*C) *string) []C {
	var out []C
	for _, c := range capped(cs) {
		m := message(&c)
		*m = capString(*m)
		out = append(out, c)
	}
	return out
}

func trimConditions(cs []metav1.Condition) []metav1.Condition {
	out := capConditions(cs, func(c *metav1.Condition) *string { return &c.Message })
	if out == nil {
		out = []metav1.Condition{}
	}
	return out
}

// trimPod keeps what the node-controller reads of a member's pod (its node, restart
// policy, phase, addresses, conditions and container states) and what the
// backup-controller reads of a Job's pod (the termination message, capped by the
// kubelet at 4 KiB too).
func trimPod(p *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{TypeMeta: p.TypeMeta, ObjectMeta: trimMeta(p.ObjectMeta)}
	out.Spec = corev1.PodSpec{
		NodeName: p.Spec.NodeName, RestartPolicy: p.Spec.RestartPolicy,
		TerminationGracePeriodSeconds: p.Spec.TerminationGracePeriodSeconds,
	}
	for _, c := range capped(p.Spec.Containers) {
		out.Spec.Containers = append(out.Spec.Containers, corev1.Container{Name: c.Name, Image: c.Image})
	}
	st := p.Status
	out.Status = corev1.PodStatus{
		Phase: st.Phase, Reason: st.Reason, Message: capString(st.Message), NominatedNodeName: st.NominatedNodeName,
		HostIP: st.HostIP, PodIP: st.PodIP, PodIPs: capped(st.PodIPs), HostIPs: capped(st.HostIPs), StartTime: st.StartTime,
		QOSClass: st.QOSClass, ObservedGeneration: st.ObservedGeneration,
	}
	out.Status.Conditions = capConditions(st.Conditions, func(c *corev1.PodCondition) *string { return &c.Message })
	out.Status.ContainerStatuses = trimContainerStatuses(st.ContainerStatuses)
	out.Status.InitContainerStatuses = trimContainerStatuses(st.InitContainerStatuses)
	return out
}

func trimContainerStatuses(cs []corev1.ContainerStatus) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, c := range capped(cs) {
		out = append(out, corev1.ContainerStatus{
			Name: c.Name, State: trimState(c.State), LastTerminationState: trimState(c.LastTerminationState),
			Ready: c.Ready, RestartCount: c.RestartCount, Image: c.Image, ImageID: c.ImageID,
			ContainerID: c.ContainerID, Started: c.Started,
		})
	}
	return out
}

func trimState(s corev1.ContainerState) corev1.ContainerState {
	if s.Waiting != nil {
		w := *s.Waiting
		w.Message = capString(w.Message)
		s.Waiting = &w
	}
	if s.Terminated != nil {
		t := *s.Terminated
		t.Message = capString(t.Message)
		s.Terminated = &t
	}
	return s
}

func trimClaim(c *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	out := &corev1.PersistentVolumeClaim{TypeMeta: c.TypeMeta, ObjectMeta: trimMeta(c.ObjectMeta)}
	out.Spec = corev1.PersistentVolumeClaimSpec{
		AccessModes: capped(c.Spec.AccessModes), Resources: c.Spec.Resources,
		StorageClassName: c.Spec.StorageClassName, VolumeName: c.Spec.VolumeName, VolumeMode: c.Spec.VolumeMode,
	}
	out.Status = corev1.PersistentVolumeClaimStatus{
		Phase: c.Status.Phase, AccessModes: capped(c.Status.AccessModes), Capacity: c.Status.Capacity,
		AllocatedResources: c.Status.AllocatedResources,
	}
	for _, cond := range capped(c.Status.Conditions) {
		cond.Message = capString(cond.Message)
		out.Status.Conditions = append(out.Status.Conditions, cond)
	}
	return out
}

// trimTemplate keeps a pod template's labels and the operator's annotations (the
// template hash): the node-controller compares templates by their hash, and reads a
// workload whole from the API server before it replaces its template.
func trimTemplate(t corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: trimLabels(t.Labels), Annotations: ownAnnotations(t.Annotations)}}
}

func trimStatefulSet(s *appsv1.StatefulSet) *appsv1.StatefulSet {
	out := &appsv1.StatefulSet{TypeMeta: s.TypeMeta, ObjectMeta: trimMeta(s.ObjectMeta)}
	out.Spec = appsv1.StatefulSetSpec{Replicas: s.Spec.Replicas, Selector: s.Spec.Selector, ServiceName: s.Spec.ServiceName,
		Template: trimTemplate(s.Spec.Template)}
	out.Status = s.Status
	out.Status.Conditions = capConditions(s.Status.Conditions, func(c *appsv1.StatefulSetCondition) *string { return &c.Message })
	return out
}

func trimDeployment(d *appsv1.Deployment) *appsv1.Deployment {
	out := &appsv1.Deployment{TypeMeta: d.TypeMeta, ObjectMeta: trimMeta(d.ObjectMeta)}
	out.Spec = appsv1.DeploymentSpec{Replicas: d.Spec.Replicas, Selector: d.Spec.Selector, Template: trimTemplate(d.Spec.Template)}
	out.Status = d.Status
	out.Status.Conditions = capConditions(d.Status.Conditions, func(c *appsv1.DeploymentCondition) *string { return &c.Message })
	return out
}

// trimService keeps what the cluster-controller compares with the Services it applies
// (type, selector, ports, traffic policies, source ranges) and the load balancer's
// addresses, which external access announces.
func trimService(s *corev1.Service) *corev1.Service {
	out := &corev1.Service{TypeMeta: s.TypeMeta, ObjectMeta: trimMeta(s.ObjectMeta)}
	out.Spec = corev1.ServiceSpec{
		Type: s.Spec.Type, Selector: s.Spec.Selector, Ports: capped(s.Spec.Ports), ClusterIP: s.Spec.ClusterIP,
		ClusterIPs: capped(s.Spec.ClusterIPs), PublishNotReadyAddresses: s.Spec.PublishNotReadyAddresses,
		ExternalTrafficPolicy: s.Spec.ExternalTrafficPolicy, InternalTrafficPolicy: s.Spec.InternalTrafficPolicy,
		LoadBalancerSourceRanges: s.Spec.LoadBalancerSourceRanges, SessionAffinity: s.Spec.SessionAffinity,
	}
	out.Status.LoadBalancer.Ingress = capped(s.Status.LoadBalancer.Ingress)
	return out
}

// trimJob keeps a Job's settings and outcome; the backup-controller reads its pods for
// the termination message.
func trimJob(j *batchv1.Job) *batchv1.Job {
	out := &batchv1.Job{TypeMeta: j.TypeMeta, ObjectMeta: trimMeta(j.ObjectMeta)}
	out.Spec = batchv1.JobSpec{Parallelism: j.Spec.Parallelism, Completions: j.Spec.Completions,
		ActiveDeadlineSeconds: j.Spec.ActiveDeadlineSeconds, BackoffLimit: j.Spec.BackoffLimit,
		Selector: j.Spec.Selector, Template: trimTemplate(j.Spec.Template)}
	st := j.Status
	out.Status = batchv1.JobStatus{StartTime: st.StartTime, CompletionTime: st.CompletionTime, Active: st.Active,
		Succeeded: st.Succeeded, Failed: st.Failed, Terminating: st.Terminating, Ready: st.Ready}
	out.Status.Conditions = capConditions(st.Conditions, func(c *batchv1.JobCondition) *string { return &c.Message })
	return out
}

// stub names an object and holds nothing else: no label, so no selection lists it.
func stub(o client.Object) client.Object {
	out := reflect.New(reflect.TypeOf(o).Elem()).Interface().(client.Object)
	out.SetName(o.GetName())
	out.SetNamespace(o.GetNamespace())
	out.SetUID(o.GetUID())
	out.SetResourceVersion(o.GetResourceVersion())
	out.SetAnnotations(map[string]string{AnnotationCacheStub: "too large to be the operator's"})
	if pm, ok := o.(*metav1.PartialObjectMetadata); ok {
		out.(*metav1.PartialObjectMetadata).TypeMeta = pm.TypeMeta
	}
	return out
}

var _ toolscache.TransformFunc = Trim
