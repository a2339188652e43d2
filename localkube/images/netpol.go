package images

import (
	"context"
	"fmt"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// NetpolRef is the tag of the NetworkPolicy engine's image: kube-network-policies (the
// SIG Network agent, a Go module built static by localkube build), run by the local
// Kubernetes as a hostNetwork DaemonSet.
const NetpolRef = "docker.io/local/kube-network-policies:dev"

// netpolSpec is the engine's image: the binary as /usr/local/bin/netpol. It runs as
// root: it opens the node's netfilter queue.
func (b *builder) netpolSpec() (spec, error) {
	fi, err := os.Stat(b.c.NetpolBinary)
	if err != nil {
		return spec{}, fmt.Errorf("NetworkPolicy engine binary: %w", err)
	}
	return spec{
		Image: Image{Ref: NetpolRef, Tags: []string{NetpolRef}, Component: ComponentNetpol, Version: "dev"},
		file:  "kube-network-policies",
		config: v1.Config{
			Entrypoint: []string{"/usr/local/bin/netpol"}, Env: []string{pathEnv}, WorkingDir: "/",
		},
		inputs: []string{fmt.Sprintf("netpol %s %d %d", b.c.NetpolBinary, fi.Size(), fi.ModTime().UnixNano())},
		fill: func(_ context.Context, t tree) error {
			if err := checkStatic(b.c.NetpolBinary); err != nil {
				return fmt.Errorf("NetworkPolicy engine binary: %w", err)
			}
			t.file("/usr/local/bin/netpol", b.c.NetpolBinary, 0o755)
			addBase(t, operatorAccounts)
			return nil
		},
	}, nil
}
