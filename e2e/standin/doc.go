// Package standin runs the operator's real binaries against a real API server with
// stand-ins for the rest of Kubernetes, so the benchmark measures the operator at more
// members than the local Kubernetes can hold (`make bench-fleet-standin`, bench item 9;
// docs/testing.md says what the stand-in leaves out).
//
// Start gives the Env: envtest's kube-apiserver and etcd with the CRDs,
// kube-controller-manager's workload, garbage-collector and namespace controllers, a
// Node, and the Kubelet, which binds the members' pods and runs their server
// containers' own commands with valkey-server on a loopback address of each pod's own.
// StartOperator runs the chart's components as host processes, each as its
// ServiceAccount; Fleet grows and measures a fleet of one-member clusters with them.
package standin
