// Command localkube runs the project's local Kubernetes: a real control plane and worker
// nodes in network namespaces of this machine, with locally built images.
//
//	localkube build              build the Kubernetes, etcd and CoreDNS binaries (cached);
//	                             --monitoring and --certmanager add the programs of the
//	                             e2e suites that use the Prometheus Operator, cert-manager
//	localkube images             build the container images (cached)
//	localkube up [--nodes N]     start the cluster (reports a running one, cleans leftovers)
//	localkube down               stop it and remove everything it made on the machine
//	localkube status             exit 0 when the cluster runs and is healthy
//	localkube link N up|down     restore or cut node N's network link
//	localkube load FILE...       import image tarballs into every node
//	localkube snapshot           print the host state that local-down must restore
//	localkube images-list        print the image tarballs (for docker load / kind load)
//	localkube valkey-servers -out DIR
//	                             unpack the Valkey images' servers into DIR, runnable on
//	                             this host; print them as JSON (make config-table)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/valkey-operator/valkey-operator/localkube"
)

func main() {
	closeInheritedOnExec()
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "localkube:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: localkube build|images|kind-image|up|down|status|link|load|snapshot")
	}
	fs := flag.NewFlagSet(args[0], flag.ExitOnError)
	cfg := localkube.Config{}
	fs.StringVar(&cfg.CacheDir, "cache-dir", os.Getenv("LOCALKUBE_CACHE"), "cache folder (default <repo>/.cache)")
	fs.StringVar(&cfg.RepoRoot, "repo-root", "", "repository root (default: found from the working directory)")
	nodes, _ := strconv.Atoi(os.Getenv("NODES"))
	fs.IntVar(&cfg.Nodes, "nodes", nodes, "number of worker nodes (default 3, or $NODES)")
	node := fs.Int("node", 0, "node index (node-run)")
	opBins := fs.String("operator-binaries", "", "folder of operator binaries to put in the operator image (images)")
	opRef := fs.String("operator-image", defaultOperatorImage, "reference of the operator image (images)")
	kindOut := fs.String("out", "", "also write the node image as a docker-archive to this file (kind-image); the folder of the servers (valkey-servers)")
	kindNoLoad := fs.Bool("no-load", false, "build the node image without loading it into Docker (kind-image)")
	s3Bin := fs.String("s3-binary", "", "static versitygw binary to build the S3 server image from (images)")
	impostor := fs.Bool("impostor", false, "also build docker.io/valkey/valkey:impostor (Redis under the name valkey-server), for the e2e security suite (images)")
	monitoring := fs.Bool("monitoring", false, "also build the Prometheus Operator and its config reloader, for the e2e monitoring suite (build)")
	certManager := fs.Bool("certmanager", false, "also build cert-manager's controller, cainjector and webhook, for the e2e suites that use cert-manager (build)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	cfg.Log = func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, a...))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	switch args[0] {
	case "build":
		if err := localkube.Build(ctx, cfg); err != nil {
			return err
		}
		if *monitoring {
			if err := localkube.BuildMonitoring(ctx, cfg); err != nil {
				return err
			}
		}
		if *certManager {
			return localkube.BuildCertManager(ctx, cfg)
		}
		return nil
	case "images":
		return buildImages(ctx, cfg, *opBins, *opRef, *s3Bin, *impostor)
	case "up":
		return localkube.Up(ctx, cfg, self)
	case "down":
		return localkube.Down(ctx, cfg)
	case "status":
		return status(ctx, cfg)
	case "link":
		return link(ctx, cfg, fs.Args())
	case "load":
		return localkube.LoadImages(ctx, cfg, fs.Args())
	case "images-list":
		return listImages(cfg)
	case "snapshot":
		return localkube.WriteSnapshot(ctx, cfg, os.Stdout)
	case "node-run":
		// The node runner must not stop on our signal context: it handles SIGTERM itself.
		stop()
		return localkube.RunNode(context.Background(), cfg, *node)
	case "provisioner":
		return localkube.RunProvisioner(ctx, cfg)
	case "kind-image":
		return kindImage(ctx, cfg, *kindOut, !*kindNoLoad)
	case "valkey-servers":
		return valkeyServers(ctx, cfg, *kindOut)
	}
	return fmt.Errorf("unknown command %q", args[0])
}

func status(ctx context.Context, cfg localkube.Config) error {
	st, err := cfg.Status(ctx)
	names := make([]string, 0, len(st.Components))
	for n := range st.Components {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		state := "running"
		if !st.Components[n] {
			state = "NOT RUNNING"
		}
		fmt.Printf("%-26s %s\n", n, state)
	}
	if err != nil {
		return err
	}
	fmt.Printf("healthy: %d nodes\nexport KUBECONFIG=%s\n", st.Nodes, st.Kubeconfig)
	return nil
}

func link(ctx context.Context, cfg localkube.Config, args []string) error {
	if len(args) != 2 || (args[1] != "up" && args[1] != "down") {
		return fmt.Errorf("usage: localkube link NODE up|down")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil {
		return fmt.Errorf("node index %q: %w", args[0], err)
	}
	return cfg.SetLink(ctx, n, args[1] == "up")
}

// closeInheritedOnExec keeps the descriptors this program inherited (a lock a wrapper
// holds, a pipe of a test harness) out of the daemons it starts: they outlive the caller,
// and would hold the lock or the pipe open for as long as the cluster runs.
func closeInheritedOnExec() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
