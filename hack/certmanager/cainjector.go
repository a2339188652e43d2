package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmscheme "github.com/cert-manager/cert-manager/pkg/client/clientset/versioned/scheme"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	"github.com/cert-manager/cert-manager/pkg/util"
)

// injectorLease is the cainjector's Lease, cert-manager's own name for it.
const injectorLease = "cert-manager-cainjector-leader-election"

// runCAInjector injects CA bundles into the webhook configurations until ctx ends, once
// it holds the Lease. It reads Secrets uncached, as cert-manager's cainjector does: a
// cluster's Secrets are not its to hold in memory.
func runCAInjector(ctx context.Context, o options) error {
	ctrl.SetLogger(klog.NewKlogr())
	cfg, err := o.restConfig()
	if err != nil {
		return fmt.Errorf("client configuration: %w", err)
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(kscheme.AddToScheme(scheme))
	utilruntime.Must(cmscheme.AddToScheme(scheme))
	mgr, err := ctrl.NewManager(util.RestConfigWithUserAgent(cfg, "cainjector"), ctrl.Options{
		Scheme:                        scheme,
		Cache:                         cache.Options{ReaderFailOnMissingInformer: true},
		Client:                        client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		LeaderElection:                o.leaderElect,
		LeaderElectionNamespace:       o.namespace,
		LeaderElectionID:              injectorLease,
		LeaderElectionResourceLock:    resourcelock.LeasesResourceLock,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &o.lease.duration,
		RenewDeadline:                 &o.lease.renewDeadline,
		RetryPeriod:                   &o.lease.retryPeriod,
	})
	if err != nil {
		return fmt.Errorf("create the manager: %w", err)
	}
	if err := cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			cainjector.ValidatingWebhookConfigurationName: true,
			cainjector.MutatingWebhookConfigurationName:   true,
		},
	}); err != nil {
		return fmt.Errorf("register the injectors: %w", err)
	}
	return mgr.Start(ctx)
}
