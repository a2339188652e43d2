package framework

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/rueidis"
	corev1 "k8s.io/api/core/v1"
)

// ValkeyPort is the port the suites' Valkey servers listen on.
const ValkeyPort = 6379

// BusPort is the port of their cluster bus.
const BusPort = 16379

// PodAddr is the pod's IP with the Valkey port.
func PodAddr(p *corev1.Pod) string {
	return net.JoinHostPort(p.Status.PodIP, strconv.Itoa(ValkeyPort))
}

// ValkeyClient connects to one Valkey server (no cluster discovery, no client cache,
// no retries: a test wants to see each failure). Close it after use.
func ValkeyClient(addr string, timeout time.Duration) (rueidis.Client, error) {
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:       []string{addr},
		ForceSingleClient: true,
		DisableCache:      true,
		DisableRetry:      true,
		Dialer:            net.Dialer{Timeout: timeout},
		ConnWriteTimeout:  timeout,
	})
	if err != nil {
		return nil, fmt.Errorf("connect to valkey at %s: %w", addr, err)
	}
	return c, nil
}

// Ping connects to a Valkey server and expects PONG, within timeout.
func Ping(ctx context.Context, addr string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := ValkeyClient(addr, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	got, err := c.Do(ctx, c.B().Ping().Build()).ToString()
	if err != nil {
		return fmt.Errorf("PING %s: %w", addr, err)
	}
	if got != "PONG" {
		return fmt.Errorf("PING %s: got %q", addr, got)
	}
	return nil
}
