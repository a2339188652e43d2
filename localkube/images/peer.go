package images

// ComponentPeer is the official valkey-io operator's image (Config.PeerBinary), the peer
// that `BENCH_PEER=1 make bench` measures next to this operator.
const ComponentPeer = "peer-operator"

// PeerRepository is the repository of the peer's image; its tag is Config.PeerVersion.
const PeerRepository = "docker.io/local/valkey-io-operator"

// peerSpec is the peer's image as its own Dockerfile makes it: the static manager at
// /manager, its entrypoint, run as distroless's nonroot user (65532), whose pod asks for
// runAsNonRoot.
func (b *builder) peerSpec() (spec, error) {
	version := b.c.PeerVersion
	if version == "" {
		version = "dev"
	}
	return b.staticSpec(staticImage{
		ref: PeerRepository + ":" + version, component: ComponentPeer, version: version, file: "valkey-io-operator",
		bins: []staticBinary{{
			key: "peer", what: "valkey-io operator binary",
			src: b.c.PeerBinary, dest: "/manager",
		}},
		entrypoint: "/manager",
		user:       "65532:65532",
		home:       true,
	})
}
