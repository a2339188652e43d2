package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// errNoCertificate is returned while no serving certificate has been loaded.
var errNoCertificate = errors.New("no serving certificate loaded yet")

// Keeper serves the certificate of the rotator's Secret from memory. It runs on every
// replica (leader or not): each change of the Secret is loaded at once, with no
// volume to wait for.
type Keeper struct {
	// Client reads the Secret (the manager's cached client).
	Client client.Reader
	// Secret names the Secret holding the bundle.
	Secret types.NamespacedName

	current atomic.Pointer[tls.Certificate]
	ca      atomic.Pointer[[]byte]
}

// Reconcile loads the serving certificate from the Secret. A missing or broken Secret
// keeps the certificate already loaded: the rotator is about to write a new one.
func (k *Keeper) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	secret := &corev1.Secret{}
	err := k.Client.Get(ctx, k.Secret, secret)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("get secret %s: %w", k.Secret, err)
	}
	pair, err := tls.X509KeyPair(secret.Data[KeyServingCert], secret.Data[KeyServingKey])
	if err != nil {
		log.FromContext(ctx).Info("secret holds no usable serving certificate yet", "secret", k.Secret, "reason", err.Error())
		return reconcile.Result{}, nil
	}
	if old := k.current.Load(); old == nil || old.Leaf == nil || !old.Leaf.Equal(pair.Leaf) {
		log.FromContext(ctx).Info("serving certificate loaded", "secret", k.Secret, "notAfter", pair.Leaf.NotAfter)
	}
	k.current.Store(&pair)
	ca := append([]byte(nil), secret.Data[KeyCACert]...)
	k.ca.Store(&ca)
	return reconcile.Result{}, nil
}

// GetCertificate returns the loaded certificate, for tls.Config.GetCertificate.
func (k *Keeper) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	cert := k.current.Load()
	if cert == nil {
		return nil, errNoCertificate
	}
	return cert, nil
}

// InjectedChecker is a readiness check that passes once every webhook of the
// configuration trusts the CA of the loaded certificate: the chart installs it failing
// closed, so until then the API server refuses what the webhooks admit, and a replica
// must not count as ready.
func (k *Keeper) InjectedChecker(configuration string) func(*http.Request) error {
	return func(r *http.Request) error {
		ca := k.ca.Load()
		if ca == nil || len(*ca) == 0 {
			return errNoCertificate
		}
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := k.Client.Get(r.Context(), types.NamespacedName{Name: configuration}, cfg); err != nil {
			return fmt.Errorf("read webhook configuration %s: %w", configuration, err)
		}
		for _, w := range cfg.Webhooks {
			if !bytes.Contains(w.ClientConfig.CABundle, bytes.TrimSpace(*ca)) {
				return fmt.Errorf("webhook %s does not trust the serving CA yet", w.Name)
			}
		}
		return nil
	}
}

// Checker is a readiness check that passes once a certificate is loaded.
func (k *Keeper) Checker(*http.Request) error {
	if k.current.Load() == nil {
		return errNoCertificate
	}
	return nil
}
