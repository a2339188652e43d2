package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	configvalidation "github.com/cert-manager/cert-manager/internal/apis/config/webhook/validation"
	cmwebhook "github.com/cert-manager/cert-manager/internal/webhook"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	utilfeature "github.com/cert-manager/cert-manager/pkg/util/feature"
	webhookoptions "github.com/cert-manager/cert-manager/pkg/webhook/options"
)

// runWebhook serves cert-manager's admission webhook (defaulting, validation, and the
// CertificateRequest identity and approval checks) until SIGTERM. Its flags are
// cert-manager's own (pkg/webhook/options), with its defaults; the handlers are the
// internal packages this module may import because its path lies under
// cert-manager's (go.mod says why).
func runWebhook(args []string) error {
	cfg, err := webhookoptions.NewWebhookConfiguration()
	if err != nil {
		return fmt.Errorf("webhook: default configuration: %w", err)
	}
	fs := pflag.NewFlagSet("webhook", pflag.ContinueOnError)
	webhookoptions.AddConfigFlags(fs, cfg)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("webhook: unexpected arguments %q", fs.Args())
	}
	if err := configvalidation.ValidateWebhookConfiguration(cfg, nil).ToAggregate(); err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(cfg.FeatureGates); err != nil {
		return fmt.Errorf("webhook: feature gates: %w", err)
	}
	logf.InitLogs()
	defer logf.FlushLogs()
	log := logf.Log.WithName("webhook")
	if err := logf.ValidateAndApply(&cfg.Logging); err != nil {
		return fmt.Errorf("webhook: logging: %w", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, log)
	srv, err := cmwebhook.NewCertManagerWebhookServer(log, *cfg)
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	return srv.Run(ctx)
}
