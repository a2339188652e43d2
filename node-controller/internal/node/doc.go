// Package node is the node-controller's reconciler: it turns one ValkeyNode into one
// running Valkey server. For each node it keeps a ConfigMap with the rendered valkey.conf,
// a workload (a singleton StatefulSet, a singleton Deployment, or a bare Pod), a
// PersistentVolumeClaim when the node has persistence, and the node's status fields and
// conditions PodReady, StorageReady and ConfigApplied.
//
// # Replacement is authorised, never spontaneous
//
// A running pod is replaced only when the cluster-controller raises spec.revision. The
// workload carries the revision it was built for and a hash of the pod template the
// controller built (annotations valkey.io/revision and valkey.io/pod-template-hash).
// While spec.revision equals the workload's revision the workload is left as it is,
// whatever the spec or the operator's own rendering says; a difference is reported by
// PodReady with reason UpdatePending (status True when the pod runs). When spec.revision
// differs, the ConfigMap and the workload are brought in line with the spec in one pass.
//
// # Live configuration
//
// Keys that the running server's version can change with CONFIG SET (valkeyconf.Live)
// are applied live, whatever the revision: the server checks the values first, and only
// values it took are written into the ConfigMap (whose annotation valkey.io/config keeps
// the user configuration it was rendered from). A refused value is reported by
// ConfigApplied=False, reason Refused, with the server's message, and changes nothing.
// Any other difference (a non-live key, or a live key removed, whose default only a
// restart restores) waits for a new revision.
//
// # Progress
//
// Passes are driven by watches on the ValkeyNode (spec and status), its ConfigMap and
// workload, and the pods and claims labelled with its name; a node whose server answers
// is not polled. The server's role changes without any Kubernetes event in a failover,
// but the cluster-controller, which sees every failover in the servers' views, then
// changes the member's Synced condition (IsPrimary for a primary, Synced for a replica),
// and that status change is the event on which the role is read again.
package node
