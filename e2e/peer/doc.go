// Package peer installs the official valkey-io operator, the peer that `BENCH_PEER=1 make
// bench` measures next to this one, into a running Kubernetes and removes it again.
//
// Its source is third_party/valkey-operator (hack/peer-import.sh, at the commit of its
// COMMIT file) and its image docker.io/local/valkey-io-operator:<commit> (make
// bench-peer-image). Render reads its config/ as its default install composes it
// (config/default/kustomization.yaml: the namespace and the name prefix applied to the
// CRDs, the manager's RBAC and Deployment), without kustomize, which the project does not
// install. Its API is ours: group valkey.io, kinds ValkeyCluster and ValkeyNode, so the
// two cannot be installed at once, and its clusters are read and written as
// unstructured objects (the suites' scheme maps those kinds to this operator's types).
//
// Snapshot lists what an install leaves at cluster scope (CRDs, namespaces, cluster
// RBAC, admission webhook configurations), so that a caller checks that swapping the
// operators left the Kubernetes as it found it.
package peer
