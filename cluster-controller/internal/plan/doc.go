// Package plan is the cluster-controller's judgement, apart from its acting: the model of
// a cluster as one pass observed it (Member, Topology: who serves which shard, who is in
// sync, which primary is lost) and the planners that decide from that model alone what
// the pass does next (formation, roll, scale, heal and takeover, placement and failback).
//
// It is named for what it returns: plans. A planner reads a plain input (the spec being
// applied and the observed topology, in Cluster) and returns a value that says what to
// do (a step, the members it acts on, Progressing's message); the reconciler in package
// cluster carries it out with the API server and the Valkey servers, and writes events,
// metrics and status. So the invariants hold here, in code that needs neither:
//   - nothing in this package does I/O: no Kubernetes client, no Valkey connection, no
//     clock (the pass's time is Topology.Now), no logger, no event recorder;
//   - a planner is a function of its input: the same observation gives the same plan, so
//     an operator restarting at any point plans the same, and every planner has a table
//     test built from fake members (package plantest);
//   - a plan names members of the input; acting on it changes the cluster, and the next
//     pass observes and plans again.
//
// make lint keeps the first rule (hack/devtools/importrules).
package plan
