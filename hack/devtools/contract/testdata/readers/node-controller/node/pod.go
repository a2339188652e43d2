package node

// The node-controller reads nothing of the acl-controller's.
func pod() string { return "pod" }
