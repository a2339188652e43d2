package images

// NetpolRef is the tag of the NetworkPolicy engine's image: kube-network-policies (the
// SIG Network agent, a Go module built static by localkube build), run by the local
// Kubernetes as a hostNetwork DaemonSet.
const NetpolRef = "docker.io/local/kube-network-policies:dev"

// netpolSpec is the engine's image: the binary as /usr/local/bin/netpol. It runs as
// root: it opens the node's netfilter queue.
func (b *builder) netpolSpec() (spec, error) {
	return b.staticSpec(staticImage{
		ref: NetpolRef, component: ComponentNetpol, version: "dev", file: "kube-network-policies",
		bins: []staticBinary{{
			key: "netpol", what: "NetworkPolicy engine binary",
			src: b.c.NetpolBinary, dest: "/usr/local/bin/netpol",
		}},
		entrypoint: "/usr/local/bin/netpol",
	})
}
