package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	"github.com/cert-manager/cert-manager/pkg/healthz"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"         // registers the CA issuer
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned" // registers the self-signed issuer
	logf "github.com/cert-manager/cert-manager/pkg/logs"
)

// controllers are the controllers the controller command runs, by the names their
// packages register.
var controllers = []string{
	issuers.ControllerName,
	clusterissuers.ControllerName,
	trigger.ControllerName,
	keymanager.ControllerName,
	requestmanager.ControllerName,
	issuing.ControllerName,
	readiness.ControllerName,
	revisionmanager.ControllerName,
	approver.ControllerName,
	crca.CRControllerName,
	crselfsigned.CRControllerName,
}

// leaseName is the controller's Lease, cert-manager's own name for it.
const leaseName = "cert-manager-controller"

// workers is the number of concurrent workers of each controller (cert-manager's default).
const workers = 5

// runController runs the controllers until ctx ends, once it holds the Lease.
func runController(ctx context.Context, o options, healthzAddr string) error {
	log := logf.FromContext(ctx)
	factory, err := controllerpkg.NewContextFactory(ctx, controllerpkg.ContextOptions{
		Kubeconfig:         o.kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions:      controllerpkg.IssuerOptions{ClusterResourceNamespace: o.namespace},
		CertificateOptions: controllerpkg.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	})
	if err != nil {
		return fmt.Errorf("build the controller context: %w", err)
	}
	base, err := factory.Build()
	if err != nil {
		return fmt.Errorf("build the controller context: %w", err)
	}

	g, ctx := errgroup.WithContext(ctx)
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", healthzAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", healthzAddr, err)
	}
	health := healthz.NewServer(20 * time.Second)
	g.Go(func() error { return health.Start(ctx, l) })

	elected := make(chan struct{})
	if o.leaderElect {
		g.Go(func() error { return leadOrFail(ctx, o, factory, health, elected) })
	} else {
		close(elected)
	}
	select {
	case <-ctx.Done():
		return g.Wait()
	case <-elected:
	}

	known := controllerpkg.Known()
	for _, name := range controllers {
		newController, ok := known[name]
		if !ok {
			return fmt.Errorf("controller %s is not registered", name)
		}
		c, err := newController(factory)
		if err != nil {
			return fmt.Errorf("start controller %s: %w", name, err)
		}
		log.V(logf.InfoLevel).Info("starting controller", "controller", name)
		g.Go(func() error { return c.Run(workers, ctx) })
	}
	base.SharedInformerFactory.Start(ctx.Done())
	base.KubeSharedInformerFactory.Start(ctx.Done())
	err = g.Wait()
	base.KubeSharedInformerFactory.Shutdown()
	base.SharedInformerFactory.Shutdown()
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// leadOrFail holds the controller's Lease, closing elected once it does; losing it is an
// error, which stops the controllers and the command (the pod restarts and campaigns
// again).
func leadOrFail(ctx context.Context, o options, factory *controllerpkg.ContextFactory, health *healthz.Server, elected chan struct{}) error {
	lec, err := factory.Build("leader-election")
	if err != nil {
		return err
	}
	id, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("leader election identity: %w", err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.namespace, leaseName,
		lec.Client.CoreV1(), lec.Client.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: id + "-external-cert-manager-controller", EventRecorder: lec.Recorder})
	if err != nil {
		return fmt.Errorf("leader election lock: %w", err)
	}
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.lease.duration,
		RenewDeadline:   o.lease.renewDeadline,
		RetryPeriod:     o.lease.retryPeriod,
		ReleaseOnCancel: true,
		WatchDog:        health.LeaderHealthzAdaptor,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(elected) },
			OnStoppedLeading: func() {},
		},
	})
	// RunOrDie returns when ctx ends or when the Lease is lost.
	if ctx.Err() != nil {
		return nil
	}
	return errors.New("leader election lost")
}
