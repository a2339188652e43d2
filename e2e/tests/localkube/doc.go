// Package localkube is the e2e suite that proves the test environment: nodes, pod
// networking from the host and across nodes, scheduling spread, drain, a network
// partition, storage, cluster DNS, and the pod lifecycle a Valkey operator relies on
// (exit codes, SIGTERM and grace periods). Its tests carry the build tag e2e; run it
// with `make e2e SUITE=localkube`.
package localkube
