// Package plugin implements the commands of kubectl-valkey. Every command reads and
// writes Kubernetes objects only: actions are requests the cluster-controller carries
// out (annotations on the ValkeyCluster), and the command watches their outcome in the
// cluster's status and events.
package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

const usage = `kubectl valkey: operate Valkey clusters of the valkey-operator.

Commands:
  status  <cluster>                       shards, members, roles, slots, sync, conditions, recent events
  failover <cluster> --shard N [--to M]   a planned failover of shard N (to replica M), watched until done
  restart <cluster> [--shard N]           a rolling restart (one failover per shard), watched until done
  pause   <cluster>                       hold planned changes (rolls, scales, live config, ACL/TLS rollouts)
  resume  <cluster>                       let them go on
  cli     <cluster> --user U [-- ARGS]    valkey-cli as user U in a temporary pod (interactive without ARGS)
  version                                 the plugin's version

Flags of every command: --kubeconfig, --context, -n/--namespace; -h for a command's own.
`

// Version is set by the build (-ldflags -X).
var Version = "dev"

// env is what a command runs with.
type env struct {
	c         client.Client
	cs        kubernetes.Interface
	namespace string
	out, errw io.Writer
	in        io.Reader
	// kubectl runs `kubectl attach` for an interactive cli session (the flags to reach
	// the same cluster are prepended).
	kubectlArgs []string
	// poll is how often watched outcomes are read again.
	poll time.Duration
}

// Main runs one command line.
func Main(ctx context.Context, args []string, in io.Reader, out, errw io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(out, usage)
		return nil
	}
	cmd, rest := args[0], args[1:]
	if cmd == "version" {
		fmt.Fprintln(out, Version)
		return nil
	}
	run, ok := commands[cmd]
	if !ok {
		return fmt.Errorf("unknown command %q (kubectl valkey --help lists them)", cmd)
	}
	fs := pflag.NewFlagSet("kubectl valkey "+cmd, pflag.ContinueOnError)
	fs.SetOutput(errw)
	kubeconfig := fs.String("kubeconfig", "", "path to the kubeconfig file")
	kubeContext := fs.String("context", "", "the kubeconfig context to use")
	namespace := fs.StringP("namespace", "n", "", "namespace of the cluster (default: the context's)")
	bind := run(fs)
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = *kubeconfig
	cfg := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: *kubeContext})
	ns, _, err := cfg.Namespace()
	if err != nil {
		return fmt.Errorf("read the kubeconfig: %w", err)
	}
	if *namespace != "" {
		ns = *namespace
	}
	rc, err := cfg.ClientConfig()
	if err != nil {
		return fmt.Errorf("read the kubeconfig: %w", err)
	}
	c, err := client.New(rc, client.Options{Scheme: Scheme()})
	if err != nil {
		return fmt.Errorf("connect to the API server: %w", err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("connect to the API server: %w", err)
	}
	e := &env{c: c, cs: cs, namespace: ns, in: in, out: out, errw: errw, poll: time.Second}
	if *kubeconfig != "" {
		e.kubectlArgs = append(e.kubectlArgs, "--kubeconfig", *kubeconfig)
	}
	if *kubeContext != "" {
		e.kubectlArgs = append(e.kubectlArgs, "--context", *kubeContext)
	}
	return bind(ctx, e, fs.Args())
}

// command declares its flags on fs and returns what runs once they are parsed.
type command func(fs *pflag.FlagSet) func(ctx context.Context, e *env, args []string) error

var commands = map[string]command{
	"status":   statusCommand,
	"failover": failoverCommand,
	"restart":  restartCommand,
	"pause":    pauseCommand(true),
	"resume":   pauseCommand(false),
	"cli":      cliCommand,
}

// Scheme holds the types the plugin reads.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = corev1.AddToScheme(s)
	_ = eventsv1.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	return s
}

// clusterArg is the one positional argument of most commands.
func clusterArg(args []string) (string, error) {
	if len(args) != 1 || strings.TrimSpace(args[0]) == "" {
		return "", errors.New("name one ValkeyCluster")
	}
	return args[0], nil
}

// getCluster reads a ValkeyCluster.
func (e *env) getCluster(ctx context.Context, name string) (*v1alpha1.ValkeyCluster, error) {
	vc := &v1alpha1.ValkeyCluster{}
	if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: name}, vc); err != nil {
		return nil, fmt.Errorf("get ValkeyCluster %s/%s: %w", e.namespace, name, err)
	}
	return vc, nil
}

// annotate sets (value != nil) or removes an annotation of the cluster with a merge patch.
func (e *env) annotate(ctx context.Context, vc *v1alpha1.ValkeyCluster, key string, value *string) error {
	base := vc.DeepCopy()
	if value == nil {
		delete(vc.Annotations, key)
	} else {
		if vc.Annotations == nil {
			vc.Annotations = map[string]string{}
		}
		vc.Annotations[key] = *value
	}
	if err := e.c.Patch(ctx, vc, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("annotate ValkeyCluster %s/%s: %w", vc.Namespace, vc.Name, err)
	}
	return nil
}

// until reads the cluster every poll until done says it is done (or fails), ctx ends or
// timeout passes.
func (e *env) until(ctx context.Context, name string, timeout time.Duration, done func(*v1alpha1.ValkeyCluster) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		vc, err := e.getCluster(ctx, name)
		if err == nil {
			var ok bool
			if ok, err = done(vc); ok || err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("gave up after %s: %w", timeout, err)
			}
			return fmt.Errorf("gave up after %s", timeout)
		case <-time.After(e.poll):
		}
	}
}
