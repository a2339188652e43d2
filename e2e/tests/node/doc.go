// Package node is the e2e suite of the node-controller: ValkeyNodes written by hand, as
// the cluster-controller would write them, become real Valkey servers on the local
// Kubernetes, for each workload type. It shows what a user would observe: the server
// runs the rendered config and answers an authenticated PING at its pod IP, the
// exporter serves metrics, PodReady follows the pod, live config is applied without a
// restart, a refused value is reported, a non-live change waits for spec.revision, a
// bare pod that dies stays dead, and data survives a pod only on a claim.
//
// Until the Helm chart installs the operator, the suite runs the node-controller binary
// as a process on this machine (the host reaches pod IPs); see operator_test.go. Its
// tests carry the build tag e2e; run it with `make e2e SUITE=node`.
package node
