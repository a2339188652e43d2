// Package node is the e2e suite of the node-controller: ValkeyNodes written by hand, as
// the cluster-controller would write them, become real Valkey servers on the local
// Kubernetes, for each workload type. It shows what a user would observe: the server
// runs the rendered config and answers an authenticated PING at its pod IP, the
// exporter serves metrics, PodReady follows the pod, live config is applied without a
// restart, a refused value is reported, a non-live change waits for spec.revision, a
// bare pod that dies stays dead, and data survives a pod only on a claim.
//
// The operator is installed with the project's chart, and the features write their
// ValkeyNodes as the cluster-controller's service account (the webhook admits no one
// else). With E2E_NODE_OPERATOR=process the suite instead runs the node-controller of
// this checkout as a process on this machine, which needs no image build (see
// operator_test.go). Its tests carry the build tag e2e; run it with
// `make e2e SUITE=node`.
package node
