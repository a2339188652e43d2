package node

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
)

// Setup registers the node-controller on mgr.
func Setup(mgr ctrl.Manager, maxConcurrentReconciles int) error {
	pool, err := valkeyconn.For(mgr)
	if err != nil {
		return err
	}
	r := &Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Scheme:    mgr.GetScheme(),
		Recorder:  mgr.GetEventRecorder(FieldManager),
		Dialer: &PoolDialer{
			Secrets: FallbackReader{Primary: mgr.GetClient(), Secondary: mgr.GetAPIReader()},
			Pool:    pool,
		},
	}
	return r.SetupWithManager(mgr, maxConcurrentReconciles)
}

// SetupWithManager watches ValkeyNodes (spec and status: the cluster-controller's
// status updates follow its failovers), the objects they own, and the pods and claims
// labelled with a node's name (a StatefulSet's or Deployment's pod, and a retained
// claim, carry no owner reference to the node), and the end of the servers' watches (watchServer).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrentReconciles int) error {
	return register(mgr, maxConcurrentReconciles, r, r)
}

// register builds the controller of r around rec (r, or a test's wrapper of it).
func register(mgr ctrl.Manager, maxConcurrentReconciles int, r *Reconciler, rec reconcile.Reconciler) error {
	r.watches = newWatches()
	byNode := handler.EnqueueRequestsFromMapFunc(nodeOf)
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ValkeyNode{}).
		Owns(&corev1.ConfigMap{}, builder.OnlyMetadata).
		Owns(&appsv1.StatefulSet{}).
		Owns(&appsv1.Deployment{}).
		Watches(&corev1.Pod{}, byNode).
		Watches(&corev1.PersistentVolumeClaim{}, byNode).
		WatchesRawSource(source.Channel(r.watches.events, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles}).
		Named("valkeynode").
		Complete(rec)
}

// nodeOf maps an object labelled with a node's name to that node.
func nodeOf(_ context.Context, obj client.Object) []reconcile.Request {
	l := obj.GetLabels()
	name := l[v1alpha1.LabelNode]
	if name == "" || l[v1alpha1.LabelManagedBy] != v1alpha1.ManagedBy {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}
