// Command goclient creates a ValkeyCluster with controller-runtime's client, waits until
// the operator reports it Ready, and prints its seed endpoints. It is the Go client
// example of docs/api.md; hack/devtools/modproxy builds it against the API module as a
// module proxy serves it, outside the workspace.
//
//	go run . -namespace default -name example
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	valkeyv1alpha1 "github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func main() {
	namespace := flag.String("namespace", "default", "namespace of the cluster")
	name := flag.String("name", "example", "name of the cluster")
	flag.Parse()
	if err := run(*namespace, *name); err != nil {
		fmt.Fprintln(os.Stderr, "goclient:", err)
		os.Exit(1)
	}
}

func run(namespace, name string) error {
	scheme := runtime.NewScheme()
	if err := valkeyv1alpha1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("register the API: %w", err)
	}
	cfg, err := config.GetConfig() // the kubeconfig, or the pod's service account
	if err != nil {
		return fmt.Errorf("load the kubeconfig: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("create the client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	vc := &valkeyv1alpha1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       valkeyv1alpha1.ValkeyClusterSpec{Shards: 3}, // one replica each by default
	}
	if err := c.Create(ctx, vc); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the cluster: %w", err)
	}
	// Ready: every slot is served; observedGeneration: the status is about this spec.
	err = wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(vc), vc); err != nil {
			return false, err
		}
		return vc.Status.ObservedGeneration == vc.Generation &&
			meta.IsStatusConditionTrue(vc.Status.Conditions, valkeyv1alpha1.ConditionReady), nil
	})
	if err != nil {
		return fmt.Errorf("wait for %s/%s to be Ready: %w", namespace, name, err)
	}
	fmt.Printf("%s/%s is Ready: %d shards, seeds %v\n", namespace, name, vc.Status.ReadyShards, vc.Status.SeedEndpoints)
	return nil
}
