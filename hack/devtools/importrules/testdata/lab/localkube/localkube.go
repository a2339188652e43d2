// Package localkube stands for the local Kubernetes in the import check's fixture.
package localkube

// BridgeIP is something a suite or a product module may want.
const BridgeIP = "10.99.0.1"
