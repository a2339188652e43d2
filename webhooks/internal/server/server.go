// Package server wires the webhooks binary: a controller-runtime manager whose webhook
// server runs the validating handlers, with its serving certificate either provided
// from outside (a directory, kept current by controller-runtime's file watcher) or
// issued and rotated by the binary itself (self-signed mode).
package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/valkey-operator/valkey-operator/internal/operator"
	"github.com/valkey-operator/valkey-operator/webhooks/internal/certs"
	"github.com/valkey-operator/valkey-operator/webhooks/internal/handlers"
)

// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=operator
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=operator

// CertMode says where the serving certificate comes from.
type CertMode string

const (
	// CertModeExternal reads tls.crt and tls.key from a directory (a mounted Secret
	// written by cert-manager or by hand) and reloads them when they change.
	CertModeExternal CertMode = "external"
	// CertModeSelfSigned issues a CA and a serving certificate, keeps them in a
	// Secret, renews them and sets the webhook configuration's caBundle.
	CertModeSelfSigned CertMode = "self-signed"
)

// DefaultLeaderElectionID names the Lease of the certificate rotator.
const DefaultLeaderElectionID = "valkey-operator-webhooks.valkey.io"

// Options configure the webhooks binary.
type Options struct {
	// CertMode selects the certificate source.
	CertMode CertMode
	// CertDir holds tls.crt and tls.key in external mode (controller-runtime's
	// default directory when empty).
	CertDir string
	// CertSecret is the Secret self-signed mode keeps the certificates in.
	CertSecret types.NamespacedName
	// WebhookConfiguration is the ValidatingWebhookConfiguration whose caBundle
	// self-signed mode sets.
	WebhookConfiguration string
	// Service is the Service in front of the webhook server; the serving certificate
	// of self-signed mode is issued for its DNS names.
	Service types.NamespacedName
	// Host and Port the webhook server listens on.
	Host string
	Port int
	// Operators are the service accounts allowed to write ValkeyNodes.
	Operators handlers.Identities
	// MetricsAddr and ProbeAddr are the listen addresses of the metrics and probe
	// endpoints ("0" turns one off).
	MetricsAddr, ProbeAddr string
	// PprofAddr serves the Go runtime's profiles ("0" or empty: off).
	PprofAddr string
	// MetricsSecure serves metrics over HTTPS with authentication and authorization.
	MetricsSecure bool
	// LeaderElection makes only one replica rotate certificates.
	LeaderElection bool
	// LeaderElectionNamespace and LeaderElectionID name the Lease.
	LeaderElectionNamespace, LeaderElectionID string
	// LeaseDuration of the Lease (operator.DefaultLeaseDuration when zero).
	LeaseDuration time.Duration
	// EnableHTTP2 allows HTTP/2 on the webhook server (off by default, as HTTP/2
	// stream resets have been a denial-of-service vector).
	EnableHTTP2 bool
}

// Validate checks that the options fit together.
func (o Options) Validate() error {
	var errs []error
	if o.Operators.Empty() {
		errs = append(errs, errors.New("--operator-service-accounts: list at least one of the operator's service accounts"))
	}
	switch o.CertMode {
	case CertModeExternal:
	case CertModeSelfSigned:
		if o.CertSecret.Name == "" || o.CertSecret.Namespace == "" {
			errs = append(errs, errors.New("--cert-secret: self-signed mode needs <namespace>/<name>"))
		}
		if o.WebhookConfiguration == "" {
			errs = append(errs, errors.New("--webhook-config-name: self-signed mode needs the ValidatingWebhookConfiguration to patch"))
		}
		if o.Service.Name == "" || o.Service.Namespace == "" {
			errs = append(errs, errors.New("--webhook-service: self-signed mode needs <namespace>/<name> of the webhook Service"))
		}
	default:
		errs = append(errs, fmt.Errorf("--cert-mode: %q is not one of %s, %s", o.CertMode, CertModeExternal, CertModeSelfSigned))
	}
	return errors.Join(errs...)
}

// DNSNames are the names the serving certificate covers in self-signed mode.
func (o Options) DNSNames() []string {
	base := o.Service.Name + "." + o.Service.Namespace + ".svc"
	return []string{base, base + ".cluster.local"}
}

func (o Options) leaseDuration() time.Duration {
	if o.LeaseDuration > 0 {
		return o.LeaseDuration
	}
	return operator.DefaultLeaseDuration
}

// NewManager builds the manager with both webhooks, the certificate source and the
// health (/healthz) and readiness (/readyz) checks. Readiness passes once the webhook
// server answers TLS handshakes, that is once it has a certificate to serve.
func NewManager(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	scheme := operator.Scheme()
	certOptions := certs.Options{
		Secret: o.CertSecret, WebhookConfiguration: o.WebhookConfiguration,
		Issuer: certs.Issuer{CommonName: "valkey-operator-webhooks-ca", DNSNames: o.DNSNames()},
	}
	var keeper certs.Keeper
	mgrOptions := ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 operator.MetricsOptions(o.MetricsAddr, o.MetricsSecure),
		HealthProbeBindAddress:  o.ProbeAddr,
		PprofBindAddress:        o.PprofAddr,
		LeaderElection:          o.LeaderElection,
		LeaderElectionID:        o.LeaderElectionID,
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		LeaseDuration:           ptr.To(o.leaseDuration()),
		RenewDeadline:           ptr.To(o.leaseDuration() * 3 / 4),
		RetryPeriod:             ptr.To(o.leaseDuration() / 6),
		WebhookServer:           webhook.NewServer(webhookOptions(o, &keeper)),
	}
	if o.CertMode == CertModeSelfSigned {
		mgrOptions.Cache = certs.CacheOptions(certOptions)
	}
	mgr, err := ctrl.NewManager(cfg, mgrOptions)
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	if err := handlers.Setup(mgr, o.Operators); err != nil {
		return nil, err
	}
	if o.CertMode == CertModeSelfSigned {
		if err := certs.Setup(mgr, certOptions, &keeper); err != nil {
			return nil, err
		}
	}
	if err := addChecks(mgr, o, &keeper); err != nil {
		return nil, err
	}
	return mgr, nil
}

// webhookOptions configures the webhook server: a certificate directory, or the
// keeper's certificate in self-signed mode; HTTP/1.1 only unless HTTP/2 is enabled.
func webhookOptions(o Options, keeper *certs.Keeper) webhook.Options {
	opts := webhook.Options{Host: o.Host, Port: o.Port, CertDir: o.CertDir}
	if o.CertMode == CertModeSelfSigned {
		opts.TLSOpts = append(opts.TLSOpts, func(c *tls.Config) { c.GetCertificate = keeper.GetCertificate })
	}
	if !o.EnableHTTP2 {
		opts.TLSOpts = append(opts.TLSOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	return opts
}

// addChecks registers /healthz and /readyz.
func addChecks(mgr ctrl.Manager, o Options, keeper *certs.Keeper) error {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("webhook-server", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return fmt.Errorf("add readiness check: %w", err)
	}
	if o.CertMode != CertModeSelfSigned {
		return nil
	}
	if err := mgr.AddReadyzCheck("certificate", keeper.Checker); err != nil {
		return fmt.Errorf("add certificate readiness check: %w", err)
	}
	if o.WebhookConfiguration == "" {
		return nil
	}
	if err := mgr.AddReadyzCheck("ca-injected", keeper.InjectedChecker(o.WebhookConfiguration)); err != nil {
		return fmt.Errorf("add CA readiness check: %w", err)
	}
	return nil
}
