// Command goredis is the client matrix's go-redis writer: it writes keys through a
// go-redis ClusterClient with the library's defaults, as an application would, and
// reports what it saw. It keeps the contract every writer of the matrix keeps
// (e2e/clients/README.md): configuration from the environment, a "ready" line, one
// writer loop until SIGTERM or the end of stdin, every acknowledged key read back, one
// "report" line.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/valkey-operator/valkey-operator/e2e/clients"
)

var digits = regexp.MustCompile(`[0-9]+`)

// errorKey groups similar errors: the message cut to 120 characters, digits as N.
func errorKey(err error) string {
	m := err.Error()
	if len(m) > 120 {
		m = m[:120]
	}
	return digits.ReplaceAllString(m, "N")
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func main() {
	prefix := os.Getenv("PREFIX")
	if prefix == "" {
		prefix = "cl"
	}
	interval := time.Duration(envInt("INTERVAL_MS", 5)) * time.Millisecond
	timeout := time.Duration(envInt("TIMEOUT_MS", 2000)) * time.Millisecond
	opts := &redis.ClusterOptions{
		Addrs:        strings.Split(os.Getenv("SEEDS"), ","),
		Username:     os.Getenv("VK_USERNAME"),
		Password:     os.Getenv("VK_PASSWORD"),
		DialTimeout:  timeout,
		ReadTimeout:  timeout,
		WriteTimeout: timeout,
	}
	// The matrix's tuned row: how long a dial may take and how often it is tried (the
	// library's DialerRetries is 5), so that a member's old address costs less.
	if ms := envInt("DIAL_TIMEOUT_MS", 0); ms > 0 {
		opts.DialTimeout = time.Duration(ms) * time.Millisecond
	}
	if n := envInt("DIAL_RETRIES", 0); n > 0 {
		opts.DialerRetries = n
	}
	c := redis.NewClusterClient(opts)

	// A line SEEDS=host:port,... on stdin replaces the seeds for the read back (after
	// a roll every member has a new address).
	// The writer stops on SIGTERM, SIGINT or the end of stdin.
	var readSeeds atomic.Value
	stopped, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "SEEDS="); ok {
				readSeeds.Store(strings.Split(v, ","))
			}
		}
		stop()
	}()

	ctx := context.Background()
	for {
		err := c.Ping(ctx).Err()
		if err == nil {
			break
		}
		fmt.Fprintf(os.Stderr, "%s not ready: %v\n", time.Now().Format(time.TimeOnly), err)
		select {
		case <-stopped.Done():
			os.Exit(1)
		case <-time.After(200 * time.Millisecond):
		}
	}
	fmt.Println(`{"event":"ready"}`)

	name := "go-redis " + version()
	if os.Getenv("DIAL_TIMEOUT_MS") != "" || os.Getenv("DIAL_RETRIES") != "" {
		tries := opts.DialerRetries
		if tries == 0 {
			tries = 5 // the library's default
		}
		name += fmt.Sprintf(" (dial %v, %d tries)", opts.DialTimeout, tries)
	}
	r := clients.Report{Event: "report", Client: name, Errors: map[string]int{}, LostKeys: []string{}}
	began := time.Now()
	var acked []int
	var lastAck time.Time
	for i := 0; ; i++ {
		if stopped.Err() != nil {
			break
		}
		r.Writes++
		if err := c.Set(ctx, fmt.Sprintf("%s:%d", prefix, i), strconv.Itoa(i), 0).Err(); err != nil {
			r.Failed++
			r.Errors[errorKey(err)]++
			fmt.Fprintf(os.Stderr, "%s write %d: %v\n", time.Now().Format(time.TimeOnly), i, err)
		} else {
			now := time.Now()
			if !lastAck.IsZero() && now.Sub(lastAck).Milliseconds() > r.LongestGapMs {
				r.LongestGapMs = now.Sub(lastAck).Milliseconds()
				r.LongestGapAtMs = lastAck.Sub(began).Milliseconds()
			}
			lastAck = now
			acked = append(acked, i)
		}
		time.Sleep(interval)
	}
	r.Acked = len(acked)
	_ = c.Close()

	// A new client reads back, so that a writing client left in a bad state does not
	// hide what the cluster kept; retries end 30 s after the first failed read.
	if s, ok := readSeeds.Load().([]string); ok {
		opts.Addrs = s
	}
	reader := redis.NewClusterClient(opts)
	defer reader.Close()
	var deadline time.Time
	for _, i := range acked {
		key := fmt.Sprintf("%s:%d", prefix, i)
		for {
			if !deadline.IsZero() && time.Now().After(deadline) {
				r.Unread++
				break
			}
			v, err := reader.Get(ctx, key).Result()
			if err == nil || err == redis.Nil {
				if v != strconv.Itoa(i) {
					r.Lost++
					if len(r.LostKeys) < 10 {
						r.LostKeys = append(r.LostKeys, key)
					}
				}
				break
			}
			if deadline.IsZero() {
				deadline = time.Now().Add(30 * time.Second)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
}

// version is go-redis' version as the binary was built with it.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/redis/go-redis/v9" {
				return strings.TrimPrefix(d.Version, "v")
			}
		}
	}
	return redis.Version()
}
