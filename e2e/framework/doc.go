// Package framework is what every e2e suite of the project uses: the cluster provider
// (the local Kubernetes of the localkube module, or kind), the test environment built on
// sigs.k8s.io/e2e-framework, and helpers for the things suites do again and again:
// a namespace per feature, waiting for a condition on an object, kubectl, exec into a
// pod, one-shot toolbox pods, the image manifest, node disruptions and host snapshots.
//
// A suite is one Go package under e2e/tests/<suite>/ whose test files carry the build
// tag e2e, so a plain `go test ./...` of the module skips it:
//
//	//go:build e2e
//
//	var testenv env.Environment
//
//	func TestMain(m *testing.M) {
//		var err error
//		if testenv, err = framework.NewEnv("mysuite"); err != nil {
//			log.Fatal(err)
//		}
//		os.Exit(testenv.Run(m))
//	}
//
//	func TestSomething(t *testing.T) {
//		f := framework.NewFeature("mysuite", "what a user observes").
//			Assess("it holds", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
//				k := framework.ClusterFrom(ctx, t)
//				ns := framework.Namespace(ctx)
//				...
//				return ctx
//			}).Feature()
//		testenv.Test(t, f)
//	}
//
// Environment variables:
//
//	E2E_PROVIDER       local (default) or kind
//	E2E_NODES          worker nodes of a cluster the provider brings up (default 3)
//	E2E_KEEP_CLUSTER   when set, a cluster the suite brought up is left running
//	E2E_KEEP_NAMESPACES when set, the namespace of a failed feature is kept
//	E2E_ARTIFACTS      where cluster logs go when a feature failed
//	                   (default <cache>/e2e/artifacts/<suite>-<time>)
//	E2E_KIND_CLUSTER   name of the kind cluster (default valkey-e2e)
//	E2E_KIND_IMAGE     kind node image: unset, the project's (make kind-image, no
//	                   registry); "stock", kind's own kindest/node (needs internet);
//	                   anything else, that image
//	LOCALKUBE_CACHE    the cache folder (default <repo>/.cache)
//	E2E_REPO_ROOT      the repository (default: the folder holding go.work above the
//	                   working directory)
//	E2E_LOCALKUBE      the localkube binary (default <repo>/bin/localkube, built if missing)
//	E2E_KUBECTL        kubectl binary (default <cache>/k8s/<version>/bin/kubectl, then PATH)
//	E2E_SLOW_API       bloat: before the features, write and delete 200 Secrets of
//	                   900 KiB (once per cluster), so the API server answers as a busy
//	                   one whose etcd holds hundreds of megabytes (slowapi.go)
//
// The flags of e2e-framework work after -args: --feature, --assess, --labels,
// --skip-labels, --fail-fast and the others (hack/e2e.sh passes E2E_ARGS there).
// Features that disturb nodes carry disruptive=true: --skip-labels=disruptive=true
// leaves them out.
//
// On the kind provider (see KindProvider), CutLink takes the host side of the node
// container's link down (its kubelet and pods keep running, cut off), the pod network is
// the provider's own (no kindnetd), the host reaches pod IPs through routes to each
// node's pod CIDR via the node container's address, and the local provider's
// StorageClass is served from a host folder every worker mounts; Create sets these up
// and Destroy removes them.
package framework
