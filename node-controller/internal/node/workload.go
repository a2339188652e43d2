package node

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// gateAction is what the revision gate allows for an existing workload.
type gateAction int

const (
	// keepWorkload: spec.revision is the workload's; the workload is left as it is,
	// whatever the spec or the operator's rendering says.
	keepWorkload gateAction = iota
	// recordRevision: a new revision that builds the same pod; only the workload's
	// revision annotation changes, the pod stays.
	recordRevision
	// replacePod: a new revision with a different pod: the workload is rebuilt.
	replacePod
)

// decide applies the revision gate to a workload annotated with ann.
func decide(specRevision int64, ann map[string]string, desiredHash string) gateAction {
	switch {
	case ann[AnnotationRevision] == strconv.FormatInt(specRevision, 10):
		return keepWorkload
	case ann[AnnotationTemplateHash] == desiredHash:
		return recordRevision
	default:
		return replacePod
	}
}

// workloadAnnotations records the revision and template hash on a workload.
func workloadAnnotations(revision int64, hash string) map[string]string {
	return map[string]string{AnnotationRevision: strconv.FormatInt(revision, 10), AnnotationTemplateHash: hash}
}

// buildStatefulSet is the node's singleton StatefulSet.
func buildStatefulSet(vn *v1alpha1.ValkeyNode, tmpl corev1.PodTemplateSpec) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: workloadMeta(vn, tmpl),
		Spec: appsv1.StatefulSetSpec{
			Replicas:             ptr.To[int32](1),
			Selector:             &metav1.LabelSelector{MatchLabels: selectorLabels(vn)},
			ServiceName:          v1alpha1.HeadlessServiceName(vn.Spec.ClusterName),
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			UpdateStrategy:       appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
			RevisionHistoryLimit: ptr.To[int32](2),
			Template:             tmpl,
		},
	}
}

// buildDeployment is the node's singleton Deployment; Recreate, so two servers of one
// node never run at the same time.
func buildDeployment(vn *v1alpha1.ValkeyNode, tmpl corev1.PodTemplateSpec) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: workloadMeta(vn, tmpl),
		Spec: appsv1.DeploymentSpec{
			Replicas:             ptr.To[int32](1),
			Selector:             &metav1.LabelSelector{MatchLabels: selectorLabels(vn)},
			Strategy:             appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			RevisionHistoryLimit: ptr.To[int32](2),
			Template:             tmpl,
		},
	}
}

// buildPod is the node's bare pod (workloadType Pod), named like the node.
func buildPod(vn *v1alpha1.ValkeyNode, tmpl corev1.PodTemplateSpec) *corev1.Pod {
	meta := *tmpl.ObjectMeta.DeepCopy()
	meta.Name, meta.Namespace = vn.Name, vn.Namespace
	meta.Annotations[AnnotationRevision] = strconv.FormatInt(vn.Spec.Revision, 10)
	return &corev1.Pod{ObjectMeta: meta, Spec: *tmpl.Spec.DeepCopy()}
}

// workloadMeta names a StatefulSet or Deployment like the node, with the pod's labels
// and the gate's annotations.
func workloadMeta(vn *v1alpha1.ValkeyNode, tmpl corev1.PodTemplateSpec) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        vn.Name,
		Namespace:   vn.Namespace,
		Labels:      podLabels(vn),
		Annotations: workloadAnnotations(vn.Spec.Revision, tmpl.Annotations[AnnotationTemplateHash]),
	}
}

// reconcileWorkload creates the node's workload, or applies the revision gate to it.
func (r *Reconciler) reconcileWorkload(ctx context.Context, s *scope) error {
	tmpl, err := buildPodTemplate(s.node, configHash(s.node))
	if err != nil {
		return err
	}
	s.desiredHash = tmpl.Annotations[AnnotationTemplateHash]
	switch s.node.Spec.WorkloadType {
	case v1alpha1.WorkloadDeployment:
		var cur client.Object
		if s.deployment != nil {
			cur = s.deployment
		}
		return r.reconcileController(ctx, s, cur, buildDeployment(s.node, tmpl), func(o client.Object) {
			o.(*appsv1.Deployment).Spec.Template = tmpl
		})
	case v1alpha1.WorkloadPod:
		return r.reconcileBarePod(ctx, s, tmpl)
	default:
		var cur client.Object
		if s.statefulSet != nil {
			cur = s.statefulSet
		}
		return r.reconcileController(ctx, s, cur, buildStatefulSet(s.node, tmpl), func(o client.Object) {
			o.(*appsv1.StatefulSet).Spec.Template = tmpl
		})
	}
}

// reconcileController handles a StatefulSet or Deployment: create it when missing,
// otherwise let the gate decide. setTemplate puts the desired template into a copy of
// the current object.
func (r *Reconciler) reconcileController(ctx context.Context, s *scope, cur, want client.Object, setTemplate func(client.Object)) error {
	if cur == nil {
		if s.deleting() {
			return nil
		}
		return r.createWorkload(ctx, s, want)
	}
	s.workloadAnn = cur.GetAnnotations()
	switch decide(s.node.Spec.Revision, s.workloadAnn, s.desiredHash) {
	case recordRevision:
		return r.recordRevision(ctx, s, cur)
	case replacePod:
		if s.deleting() {
			return nil
		}
		if err := r.prepareConfig(ctx, s); err != nil {
			return err
		}
		// The cache keeps a workload without its pod template (operator.Trim): the
		// update starts from the whole object.
		obj := cur.DeepCopyObject().(client.Object)
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cur), obj); err != nil {
			return fmt.Errorf("read %s %s: %w", kindOf(obj), obj.GetName(), err)
		}
		setTemplate(obj)
		setAnnotations(obj, workloadAnnotations(s.node.Spec.Revision, s.desiredHash))
		if err := r.Update(ctx, obj, fieldOwner); err != nil {
			return fmt.Errorf("update %s %s: %w", kindOf(obj), obj.GetName(), err)
		}
		s.workloadAnn = obj.GetAnnotations()
		r.event(s, obj, corev1.EventTypeNormal, "Replacing", "Replace",
			fmt.Sprintf("revision %d changes the pod: %s %s rebuilds it", s.node.Spec.Revision, kindOf(obj), obj.GetName()))
	}
	return nil
}

// createWorkload creates a missing workload from the current spec, after bringing the
// ConfigMap in line with it.
func (r *Reconciler) createWorkload(ctx context.Context, s *scope, obj client.Object) error {
	if err := r.prepareConfig(ctx, s); err != nil {
		return err
	}
	if err := controllerutil.SetControllerReference(s.node, obj, r.Scheme); err != nil {
		return fmt.Errorf("own %s: %w", kindOf(obj), err)
	}
	if err := r.Create(ctx, obj, fieldOwner); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil // created in an earlier pass the cache has not seen yet
		}
		return fmt.Errorf("create %s %s: %w", kindOf(obj), obj.GetName(), err)
	}
	s.workloadAnn = obj.GetAnnotations()
	r.event(s, obj, corev1.EventTypeNormal, "Created", "Create",
		fmt.Sprintf("created %s %s for revision %d", kindOf(obj), obj.GetName(), s.node.Spec.Revision))
	return nil
}

// recordRevision marks a workload as built for spec.revision without touching its pod.
func (r *Reconciler) recordRevision(ctx context.Context, s *scope, cur client.Object) error {
	obj := cur.DeepCopyObject().(client.Object)
	setAnnotations(obj, map[string]string{AnnotationRevision: strconv.FormatInt(s.node.Spec.Revision, 10)})
	if err := r.Patch(ctx, obj, client.MergeFrom(cur), fieldOwner); err != nil {
		return fmt.Errorf("record revision on %s %s: %w", kindOf(obj), obj.GetName(), err)
	}
	s.workloadAnn = obj.GetAnnotations()
	r.event(s, obj, corev1.EventTypeNormal, "RevisionRecorded", "Update",
		fmt.Sprintf("revision %d builds the same pod; %s %s keeps it", s.node.Spec.Revision, kindOf(obj), obj.GetName()))
	return nil
}

// reconcileBarePod handles workloadType Pod. A missing pod is created only when none
// ran yet or a new revision authorises it; a pod that existed and vanished is reported
// (PodMissing), since the cluster-controller replaces the member. A new revision that
// changes the pod deletes it; the next pass creates its successor.
func (r *Reconciler) reconcileBarePod(ctx context.Context, s *scope, tmpl corev1.PodTemplateSpec) error {
	pod := s.pod
	if pod == nil {
		if s.deleting() {
			return nil
		}
		if s.node.Status.PodName != "" && s.node.Status.Revision == s.node.Spec.Revision {
			s.podMissing = true
			return nil
		}
		return r.createWorkload(ctx, s, buildPod(s.node, tmpl))
	}
	s.workloadAnn = pod.Annotations
	if pod.DeletionTimestamp != nil {
		return nil
	}
	switch decide(s.node.Spec.Revision, s.workloadAnn, s.desiredHash) {
	case recordRevision:
		return r.recordRevision(ctx, s, pod)
	case replacePod:
		if s.deleting() {
			return nil
		}
		if err := r.prepareConfig(ctx, s); err != nil {
			return err
		}
		if err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pod %s: %w", pod.Name, err)
		}
		r.event(s, pod, corev1.EventTypeNormal, "Replacing", "Replace",
			fmt.Sprintf("revision %d changes the pod: deleted pod %s, its successor follows", s.node.Spec.Revision, pod.Name))
	}
	return nil
}

// prepareConfig brings the ConfigMap in line with the spec before a new pod is built:
// the next pod starts from it.
func (r *Reconciler) prepareConfig(ctx context.Context, s *scope) error {
	refused := s.configCond.Reason == v1alpha1.ReasonConfigRefused
	next := nextConfig(s.desiredConfig, s.applied, refused, liveVersion(s.node, s.serverVersion))
	_, err := r.writeConfigMap(ctx, s, next)
	return err
}

// pendingMessage explains an update held back by the gate, or returns "" when the
// workload runs what the spec builds.
func pendingMessage(s *scope) string {
	if s.workloadAnn == nil || s.workloadAnn[AnnotationTemplateHash] == s.desiredHash {
		return ""
	}
	var what []string
	if keys := diffConfig(s.applied, s.desiredConfig, liveVersion(s.node, s.serverVersion)).Restart; len(keys) > 0 {
		what = append(what, "config "+strings.Join(keys, ", "))
	}
	if !onlyConfigDiffers(s) {
		what = append(what, "the pod template")
	}
	return fmt.Sprintf("the workload runs revision %s; the spec changes %s, which needs a new pod: raise spec.revision to replace it",
		s.workloadAnn[AnnotationRevision], strings.Join(what, " and "))
}

// onlyConfigDiffers reports whether the workload's template is what the spec builds
// with the config the ConfigMap holds, so that only config keys wait.
func onlyConfigDiffers(s *scope) bool {
	if s.applied == nil {
		return false
	}
	_, static := splitConfig(s.applied, memberVersion(s.node))
	tmpl, err := buildPodTemplate(s.node, hashBytes(renderConfig(s.node, static)))
	return err == nil && tmpl.Annotations[AnnotationTemplateHash] == s.workloadAnn[AnnotationTemplateHash]
}

// setAnnotations merges kv into obj's annotations.
func setAnnotations(obj client.Object, kv map[string]string) {
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	for k, v := range kv {
		ann[k] = v
	}
	obj.SetAnnotations(ann)
}

// kindOf names the kind of a workload object for messages.
func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *appsv1.StatefulSet:
		return "StatefulSet"
	case *appsv1.Deployment:
		return "Deployment"
	case *corev1.Pod:
		return "Pod"
	case *corev1.ConfigMap:
		return "ConfigMap"
	}
	return fmt.Sprintf("%T", obj)
}

// choosePod picks the node's current pod among those labelled with its name: for a
// bare pod the one named like the node; otherwise a pod not being deleted, newest
// first.
func choosePod(vn *v1alpha1.ValkeyNode, pods []corev1.Pod) *corev1.Pod {
	if vn.Spec.WorkloadType == v1alpha1.WorkloadPod {
		for i := range pods {
			if pods[i].Name == vn.Name {
				return &pods[i]
			}
		}
		return nil
	}
	if len(pods) == 0 {
		return nil
	}
	sorted := slices.Clone(pods)
	slices.SortFunc(sorted, func(a, b corev1.Pod) int {
		if da, db := a.DeletionTimestamp != nil, b.DeletionTimestamp != nil; da != db {
			if da {
				return 1
			}
			return -1
		}
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return &sorted[0]
}
