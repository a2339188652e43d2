package framework

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"sigs.k8s.io/e2e-framework/support"
)

// ProviderName names a cluster provider.
type ProviderName string

// The providers a suite can run on.
const (
	// ProviderLocal is the project's local Kubernetes (the localkube module): real nodes in
	// network namespaces of this machine, no Docker needed.
	ProviderLocal ProviderName = "local"
	// ProviderKind is kind (Kubernetes in Docker), for machines with Docker.
	ProviderKind ProviderName = "kind"
)

// DefaultWorkers is the number of worker nodes a provider brings up.
const DefaultWorkers = 3

// ProviderFromEnv reads E2E_PROVIDER (default local); getenv is os.Getenv outside tests.
func ProviderFromEnv(getenv func(string) string) (ProviderName, error) {
	v := strings.ToLower(strings.TrimSpace(getenv("E2E_PROVIDER")))
	switch ProviderName(v) {
	case "", ProviderLocal:
		return ProviderLocal, nil
	case ProviderKind:
		return ProviderKind, nil
	}
	return "", fmt.Errorf("E2E_PROVIDER=%q: want %q or %q", v, ProviderLocal, ProviderKind)
}

// workersFromEnv reads E2E_NODES (default DefaultWorkers).
func workersFromEnv(getenv func(string) string) (int, error) {
	v := strings.TrimSpace(getenv("E2E_NODES"))
	if v == "" {
		return DefaultWorkers, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("E2E_NODES=%q: want a positive number", v)
	}
	return n, nil
}

// Provider is a cluster provider of e2e-framework that also knows the project's node
// disruptions and whether it may tear the cluster down.
type Provider interface {
	support.E2EClusterProviderWithImageLoader
	// ProviderName names the provider.
	ProviderName() ProviderName
	// Workers is the number of worker nodes of the cluster.
	Workers() int
	// CutLink partitions a node from the control plane and the other nodes.
	CutLink(ctx context.Context, node string) error
	// RestoreLink undoes CutLink.
	RestoreLink(ctx context.Context, node string) error
}

// ProviderOptions configures NewProvider.
type ProviderOptions struct {
	Paths Paths
	// Runner runs the provider's commands (default ExecRunner).
	Runner Runner
	// Workers is the number of worker nodes to bring up (default DefaultWorkers).
	Workers int
	// Keep leaves a cluster the provider brought up running at Destroy.
	Keep bool
	// Progress receives the output of long commands (default os.Stderr).
	Progress io.Writer
	// Getenv reads the provider's settings (default os.Getenv).
	Getenv func(string) string
}

func (o ProviderOptions) withDefaults() ProviderOptions {
	if o.Runner == nil {
		o.Runner = ExecRunner{}
	}
	if o.Workers == 0 {
		o.Workers = DefaultWorkers
	}
	if o.Progress == nil {
		o.Progress = os.Stderr
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	return o
}

// NewProvider returns the named provider.
func NewProvider(name ProviderName, o ProviderOptions) (Provider, error) {
	o = o.withDefaults()
	switch name {
	case ProviderLocal:
		return NewLocalProvider(o), nil
	case ProviderKind:
		return NewKindProvider(o), nil
	}
	return nil, fmt.Errorf("unknown provider %q", name)
}
