// Command cert-manager runs cert-manager's controller, cainjector and webhook for the e2e
// suites, built from the Go module proxy (localkube build --certmanager). cert-manager's
// own commands are separate modules that the proxy does not serve, so this program wires
// the packages of its main module at the version go.mod requires:
//
//	cert-manager controller   the Issuer and ClusterIssuer controllers, the Certificate
//	                          controllers (trigger, key manager, request manager,
//	                          issuing, readiness, revision manager) and the
//	                          CertificateRequest approver and its CA and self-signed
//	                          issuers
//	cert-manager cainjector   the CA bundle injection into the validating and mutating
//	                          webhook configurations annotated cert-manager.io/inject-ca-from
//	                          or cert-manager.io/inject-ca-from-secret
//	cert-manager webhook      the admission webhook: defaulting and validation of
//	                          cert-manager's resources, and the CertificateRequest identity
//	                          and approval checks, served with a certificate of its own
//	                          dynamic CA (cert-manager's flags and defaults)
//
// Left out: the ACME, Vault and Venafi issuers and the ingress and gateway shims.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	logf "github.com/cert-manager/cert-manager/pkg/logs"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager:", err)
		os.Exit(1)
	}
}

// options are the flags both commands take.
type options struct {
	kubeconfig string
	// namespace holds the leader election Leases and, for the controller, the Secrets
	// of ClusterIssuers.
	namespace   string
	leaderElect bool
	lease       leaseTimes
}

// leaseTimes are a leader election's durations (cert-manager's defaults).
type leaseTimes struct {
	duration, renewDeadline, retryPeriod time.Duration
}

func run(args []string) error {
	if len(args) > 0 && args[0] == "webhook" {
		return runWebhook(args[1:])
	}
	if len(args) == 0 || (args[0] != "controller" && args[0] != "cainjector") {
		return fmt.Errorf("usage: cert-manager controller|cainjector|webhook [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	var o options
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: the pod's service account)")
	fs.StringVar(&o.namespace, "namespace", "cert-manager", "namespace of the leader election Lease and of the ClusterIssuers' Secrets")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "run only while holding the Lease")
	fs.DurationVar(&o.lease.duration, "leader-election-lease-duration", 60*time.Second, "leader election lease duration")
	fs.DurationVar(&o.lease.renewDeadline, "leader-election-renew-deadline", 40*time.Second, "leader election renew deadline")
	fs.DurationVar(&o.lease.retryPeriod, "leader-election-retry-period", 15*time.Second, "leader election retry period")
	healthz := fs.String("healthz-address", ":9403", "address of the controller's /livez (controller)")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.Var(klogFlags.Lookup("v").Value, "v", "log verbosity (cert-manager logs its actions at 2)")
	if err := klogFlags.Set("v", "2"); err != nil {
		return err
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments %q", args[0], fs.Args())
	}
	if o.namespace == "" {
		return fmt.Errorf("%s: --namespace is empty", args[0])
	}
	logf.InitLogs()
	defer logf.FlushLogs()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log, args[0])
	if args[0] == "controller" {
		return runController(ctx, o, *healthz)
	}
	return runCAInjector(ctx, o)
}

// restConfig is the kubeconfig's client configuration, or the pod's without one.
func (o options) restConfig() (*rest.Config, error) {
	if o.kubeconfig == "" {
		return rest.InClusterConfig()
	}
	return clientcmd.BuildConfigFromFlags("", o.kubeconfig)
}
