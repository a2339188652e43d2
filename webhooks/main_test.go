package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/valkey-operator/valkey-operator/webhooks/internal/server"
)

func parse(args ...string) (server.Options, error) {
	fs := flag.NewFlagSet("webhooks", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o, _, err := parseFlags(fs, args)
	return o, err
}

func TestParseFlags(t *testing.T) {
	const sa = "--operator-service-accounts=valkey-system:valkey-operator-cluster-controller"
	for _, tc := range []struct {
		name    string
		args    []string
		check   func(t *testing.T, o server.Options)
		wantErr string
	}{
		{name: "external mode defaults", args: []string{sa}, check: func(t *testing.T, o server.Options) {
			if o.CertMode != server.CertModeExternal || o.Port != 9443 || o.ProbeAddr != ":8081" || o.LeaderElection {
				t.Errorf("unexpected defaults: %+v", o)
			}
		}},
		{name: "self-signed mode", args: []string{sa, "--cert-mode=self-signed", "--cert-secret=valkey-system/webhook-cert",
			"--webhook-config-name=valkey-operator", "--webhook-service=valkey-operator-webhooks", "--leader-elect",
			"--zap-log-level=debug"},
			check: func(t *testing.T, o server.Options) {
				if o.Service != (types.NamespacedName{Namespace: "valkey-system", Name: "valkey-operator-webhooks"}) {
					t.Errorf("service = %v", o.Service)
				}
				want := "valkey-operator-webhooks.valkey-system.svc,valkey-operator-webhooks.valkey-system.svc.cluster.local"
				if got := strings.Join(o.DNSNames(), ","); got != want {
					t.Errorf("DNS names = %s", got)
				}
			}},
		{name: "no operator accounts", args: nil, wantErr: "--operator-service-accounts"},
		{name: "bad operator account", args: []string{"--operator-service-accounts=nocolon"}, wantErr: "--operator-service-accounts"},
		{name: "unknown mode", args: []string{sa, "--cert-mode=acme"}, wantErr: `--cert-mode: "acme"`},
		{name: "self-signed without secret", args: []string{sa, "--cert-mode=self-signed"},
			wantErr: "--cert-secret: self-signed mode needs"},
		{name: "self-signed without configuration", args: []string{sa, "--cert-mode=self-signed", "--cert-secret=ns/s",
			"--webhook-service=svc"}, wantErr: "--webhook-config-name"},
		{name: "self-signed without service namespace", args: []string{sa, "--cert-mode=self-signed", "--webhook-service=svc",
			"--webhook-config-name=x"}, wantErr: "--webhook-service"},
		{name: "malformed secret", args: []string{sa, "--cert-secret=a/b/c"}, wantErr: "--cert-secret: want <namespace>/<name>"},
		{name: "unknown flag", args: []string{"--watch-namespace=x"}, wantErr: "parse flags"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parse(tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want an error containing %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, o)
		})
	}
}

// TestVersionNeedsNoOtherFlag: --version answers before the required flags are checked.
func TestVersionNeedsNoOtherFlag(t *testing.T) {
	if _, err := parse("--version"); err != errPrintVersion {
		t.Errorf("parse(--version) = %v, want errPrintVersion", err)
	}
}
