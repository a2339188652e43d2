// Package perf is what the benchmark (e2e/bench, `make bench`) and the chaos run
// (e2e/chaos, `make chaos`) measure with: statistics of repeated runs and the result
// table, the operator's CPU and memory read from its metrics endpoints, the API server's
// write counters (per operator component through FlowSchemas of its own), a Valkey cluster
// formed by a script without the operator (the floor the operator is compared with), and
// the check that a ValkeyCluster converged to its spec as its servers report it.
//
// Nothing here needs a build tag: the parts that talk to a cluster take clients and
// return errors, and the pure parts have unit tests that `make unit` runs.
package perf
