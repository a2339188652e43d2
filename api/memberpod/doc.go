// Package memberpod holds what admission must know of the pod the node-controller
// renders for a member, and the check every such pod passes.
//
// The node-controller renders the pod (node-controller/internal/node); the webhooks and
// the controllers' guards cannot reach that code (controllers talk only through status,
// and the api module imports none of them), so this package holds the parts of the pod
// that decide its security and that both sides use: the security contexts, how the
// user's spec.containers entries are merged in (PatchContainers, with RestrictSidecar),
// and Skeleton, the member's pod as the Pod Security Standards read it (the containers'
// commands, environment and file contents left out).
//
// Check runs the upstream Pod Security library (k8s.io/pod-security-admission) at
// Level, restricted at its latest version, on a whole pod, and says which entry of
// spec.containers, and which field of it, causes each violation. Invariants, each held
// by a test:
//   - the pod the node-controller renders for the default spec passes Level;
//   - Skeleton and the rendered pod agree on every field the library reads
//     (node-controller's TestSkeletonMatchesRenderedPod), and the node-controller
//     checks the pod it renders too, before it writes any workload;
//   - Check's verdict is the library's own evaluator's.
package memberpod
