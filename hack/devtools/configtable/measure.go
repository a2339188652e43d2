package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// How a server's configuration keys are measured, with nothing but the server itself:
//
//   - the keys and their defaults: CONFIG GET * on a server started with no config but
//     a unix socket in a temporary folder (port 0: no TCP);
//   - each key's type: the server's config parser is asked. A probe is a config file of
//     two lines, the key with a test value, then a directive no server has; the server
//     stops at the first line it refuses and says why ("FATAL CONFIG FILE ERROR ... at
//     line N"), so a stop at line 2 means the value was taken, and a stop at line 1
//     carries the parser's own message. That is how a server refuses a config when a
//     member starts, so the table holds what makes a member crash-loop, not what
//     CONFIG SET would say (which refuses every immutable key before parsing it). The
//     word "x-probe" tells the kinds apart by their messages (config.c of Valkey:
//     "argument must be 'yes' or 'no'", "argument(s) must be one of the following: ...",
//     "argument must be a memory value", "... a memory or percent value", "... parsed as
//     an octal number", "... parsed into an integer"); a word taken is a string; any
//     other message is a key of its own syntax;
//   - the bounds of numbers: values at the ends of the 64-bit ranges, which the parser
//     takes as numbers and then refuses with "argument must be between MIN and MAX
//     inclusive" (or "percentage argument must be less or equal to N"); a value taken
//     at an end means the key's range reaches it.
//
// Nothing is started that listens on a network address, and every probe stops by
// itself at the second line (a timeout kills it otherwise).

// probeWord is a value of no kind: no number, boolean, enum value or memory size.
const probeWord = "x-probe"

// endDirective is a directive no Valkey has: the probe's second line.
const endDirective = "configtable-end-of-probe yes"

// probeTimeout bounds one probe's run.
const probeTimeout = 20 * time.Second

// serverCmd runs one server: its command line before the config file.
type serverCmd []string

func (c serverCmd) command(ctx context.Context, args ...string) *exec.Cmd {
	full := append(append([]string(nil), c[1:]...), args...)
	return exec.CommandContext(ctx, c[0], full...)
}

// listed is what a server lists with CONFIG GET *: its version and its keys' values.
type listed struct {
	version  string
	defaults map[string]string
}

// listKeys asks the server c runs for its version and CONFIG GET *.
func listKeys(ctx context.Context, c serverCmd, workDir string) (listed, error) {
	version, err := serverVersion(ctx, c)
	if err != nil {
		return listed{}, err
	}
	defaults, err := configGetAll(ctx, c, workDir)
	if err != nil {
		return listed{}, fmt.Errorf("measure %s: %w", version, err)
	}
	return listed{version, defaults}, nil
}

// measure finds the type of every key the server lists, and of every key of others
// (the keys other versions list) that it takes without listing it: a key hidden from
// CONFIG GET *, or deprecated and ignored, is still taken at start.
func measure(ctx context.Context, c serverCmd, workDir string, l listed, others []string) (Server, error) {
	names := make([]string, 0, len(l.defaults)+len(others))
	for k := range l.defaults {
		names = append(names, k)
	}
	for _, k := range others {
		if _, ok := l.defaults[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	names = slices.Compact(names)
	keys := make(map[string]Key, len(names))
	var mu sync.Mutex
	var firstErr error
	work := make(chan string)
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range work {
				d, isListed := l.defaults[name]
				k, known, err := classify(ctx, c, workDir, name)
				mu.Lock()
				switch {
				case err != nil:
					if firstErr == nil {
						firstErr = fmt.Errorf("measure %s: %w", l.version, err)
					}
				case !isListed && known:
					k.Unlisted = true
					keys[name] = k
				case isListed:
					if !setByMeasurement[name] {
						k.Default = &d
					}
					keys[name] = k
				}
				mu.Unlock()
			}
		}()
	}
	for _, n := range names {
		work <- n
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		return Server{}, firstErr
	}
	return Server{Version: l.version, Keys: keys}, nil
}

// setByMeasurement are the keys the measurement's own server sets, so CONFIG GET says
// nothing of their defaults.
var setByMeasurement = map[string]bool{"port": true, "unixsocket": true, "dir": true}

var versionRe = regexp.MustCompile(`\bv=(\d+\.\d+\.\d+)`)

// serverVersion asks the server for its version.
func serverVersion(ctx context.Context, c serverCmd) (string, error) {
	out, err := c.command(ctx, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w: %s", c[len(c)-1], err, out)
	}
	m := versionRe.FindSubmatch(out)
	if m == nil || !strings.Contains(string(out), "Valkey") {
		return "", fmt.Errorf("%s --version: not a Valkey server: %q", c[len(c)-1], out)
	}
	return string(m[1]), nil
}

// configGetAll starts the server on a unix socket and returns CONFIG GET *.
func configGetAll(ctx context.Context, c serverCmd, workDir string) (map[string]string, error) {
	dir, err := os.MkdirTemp(workDir, "live-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s")
	conf := filepath.Join(dir, "valkey.conf")
	body := "port 0\nunixsocket " + quote(sock) + "\ndir " + quote(dir) + "\n"
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := c.command(ctx, conf)
	cmd.Dir = dir
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	conn, err := dialWhenUp(ctx, sock, exited)
	if err != nil {
		return nil, fmt.Errorf("start server: %w\n%s", err, log.String())
	}
	defer conn.Close()
	return configGet(conn, "*")
}

// dialWhenUp connects to the unix socket once the server listens on it.
func dialWhenUp(ctx context.Context, sock string, exited <-chan error) (net.Conn, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if conn, err := net.Dial("unix", sock); err == nil {
			return conn, nil
		}
		select {
		case err := <-exited:
			return nil, fmt.Errorf("server exited: %v", err)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// configGet sends CONFIG GET pattern (RESP2) and reads the flat array of names and
// values it answers.
func configGet(conn net.Conn, pattern string) (map[string]string, error) {
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	args := []string{"CONFIG", "GET", pattern}
	var req strings.Builder
	fmt.Fprintf(&req, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(req.String())); err != nil {
		return nil, fmt.Errorf("config get: %w", err)
	}
	r := bufio.NewReader(conn)
	header, err := readLine(r)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(header, "*") {
		return nil, fmt.Errorf("config get: answer %q", header)
	}
	n, err := strconv.Atoi(header[1:])
	if err != nil || n%2 != 0 {
		return nil, fmt.Errorf("config get: answer %q", header)
	}
	out := make(map[string]string, n/2)
	for i := 0; i < n; i += 2 {
		k, err := readBulk(r)
		if err != nil {
			return nil, err
		}
		v, err := readBulk(r)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("config get: %w", err)
	}
	return strings.TrimSuffix(line, "\r\n"), nil
}

func readBulk(r *bufio.Reader) (string, error) {
	header, err := readLine(r)
	if err != nil {
		return "", err
	}
	n, err := strconv.Atoi(strings.TrimPrefix(header, "$"))
	if err != nil || !strings.HasPrefix(header, "$") || n < 0 || n > 1<<20 {
		return "", fmt.Errorf("config get: bulk %q", header)
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(r, buf); err != nil {
		return "", fmt.Errorf("config get: %w", err)
	}
	return string(buf[:n]), nil
}

// The parser's messages that tell kinds apart and carry bounds.
const (
	msgBool          = "argument must be 'yes' or 'no'"
	msgEnumPrefix    = "argument(s) must be one of the following: "
	msgMemory        = "argument must be a memory value"
	msgMemoryPercent = "argument must be a memory or percent value"
	msgOctal         = "argument couldn't be parsed as an octal number"
	msgInteger       = "argument couldn't be parsed into an integer"
)

var (
	boundsRe  = regexp.MustCompile(`^argument must be between (-?[0-9]+) and (-?[0-9]+) inclusive$`)
	percentRe = regexp.MustCompile(`^percentage argument must be less or equal to (-?[0-9]+)$`)
)

// The ends of the 64-bit ranges.
const (
	int64Min  = "-9223372036854775808"
	int64Max  = "9223372036854775807"
	uint64Max = "18446744073709551615"
)

// msgUnknown is what the parser says to a key it does not have.
const msgUnknown = "Bad directive or wrong number of arguments"

// classify finds the type of one key; known is false when the server does not take
// the key at all.
func classify(ctx context.Context, c serverCmd, workDir, key string) (k Key, known bool, err error) {
	taken, msg, err := probe(ctx, c, workDir, key, probeWord)
	if err != nil || msg == msgUnknown {
		return Key{}, false, err
	}
	k, err = kindOf(ctx, c, workDir, key, taken, msg)
	return k, err == nil, err
}

// kindOf reads the kind of a key from the parser's answer to the probe word, and
// finds the rest of its type.
func kindOf(ctx context.Context, c serverCmd, workDir, key string, taken bool, msg string) (Key, error) {
	switch {
	case taken:
		return Key{Kind: KindString}, nil
	case msg == msgBool:
		return Key{Kind: KindBool}, nil
	case strings.HasPrefix(msg, msgEnumPrefix):
		return classifyEnum(ctx, c, workDir, key, strings.Split(strings.TrimPrefix(msg, msgEnumPrefix), ", "))
	case msg == msgMemory:
		// A memory size cannot be negative; an unsigned key's range may reach 2^64-1.
		return bounded(ctx, c, workDir, key, Key{Kind: KindMemory}, 10, "0", int64Max, uint64Max)
	case msg == msgMemoryPercent:
		// 2^64-1 would read as -1, a percentage, so it is not probed.
		k, err := bounded(ctx, c, workDir, key, Key{Kind: KindMemoryOrPercent}, 10, "0", int64Max)
		if err != nil {
			return k, err
		}
		return percentBound(ctx, c, workDir, key, k)
	case msg == msgOctal:
		return bounded(ctx, c, workDir, key, Key{Kind: KindOctal}, 8, "-1", "0")
	case msg == msgInteger:
		return bounded(ctx, c, workDir, key, Key{Kind: KindInteger}, 10, int64Min, int64Max)
	}
	return Key{Kind: KindOther, Refusal: msg}, nil
}

// classifyEnum tells an enum from flags (several values in one argument, as
// shutdown-on-sigterm takes "default force").
func classifyEnum(ctx context.Context, c serverCmd, workDir, key string, values []string) (Key, error) {
	k := Key{Kind: KindEnum, Values: values}
	if len(values) < 2 {
		return k, nil
	}
	taken, _, err := probe(ctx, c, workDir, key, values[0]+" "+values[1])
	if err != nil {
		return Key{}, err
	}
	if taken {
		k.Kind = KindFlags
	}
	return k, nil
}

// bounded finds a number's bounds: the first of probes the parser refuses with its
// bounds message gives both; without one, the smallest and largest probes taken are
// the ends of the key's range.
func bounded(ctx context.Context, c serverCmd, workDir, key string, k Key, base int, probes ...string) (Key, error) {
	var taken []string
	for _, v := range probes {
		ok, msg, err := probe(ctx, c, workDir, key, v)
		if err != nil {
			return Key{}, err
		}
		if ok {
			taken = append(taken, v)
			continue
		}
		if m := boundsRe.FindStringSubmatch(msg); m != nil {
			lo, err := inBase(m[1], base)
			if err != nil {
				return Key{}, fmt.Errorf("%s: %w", key, err)
			}
			hi, err := inBase(m[2], base)
			if err != nil {
				return Key{}, fmt.Errorf("%s: %w", key, err)
			}
			k.Min, k.Max = lo, hi
			return k, nil
		}
		return Key{}, fmt.Errorf("%s: %s refused without its bounds: %q", key, v, msg)
	}
	if len(taken) < 2 {
		return Key{}, fmt.Errorf("%s: no bounds found (taken: %v)", key, taken)
	}
	lo, hi := taken[0], taken[0]
	for _, v := range taken {
		if cmpDecimal(v, lo) < 0 {
			lo = v
		}
		if cmpDecimal(v, hi) > 0 {
			hi = v
		}
	}
	k.Min, k.Max = lo, hi
	return k, nil
}

// percentBound finds the largest percentage of a memoryOrPercent key.
func percentBound(ctx context.Context, c serverCmd, workDir, key string, k Key) (Key, error) {
	ok, msg, err := probe(ctx, c, workDir, key, int64Max+"%")
	switch m := percentRe.FindStringSubmatch(msg); {
	case err != nil:
		return Key{}, err
	case ok:
		k.MaxPercent = int64Max
	case m != nil:
		k.MaxPercent = m[1]
	default:
		return Key{}, fmt.Errorf("%s: a percentage refused without its bound: %q", key, msg)
	}
	return k, nil
}

// inBase turns a number the server printed in base into decimal.
func inBase(s string, base int) (string, error) {
	n, ok := new(big.Int).SetString(s, base)
	if !ok {
		return "", fmt.Errorf("bad bound %q", s)
	}
	return n.String(), nil
}

func cmpDecimal(a, b string) int {
	x, _ := new(big.Int).SetString(a, 10)
	y, _ := new(big.Int).SetString(b, 10)
	return x.Cmp(y)
}

var lineRe = regexp.MustCompile(`Reading the configuration file, at line (\d+)`)

// probe asks the server's config parser about one value: taken, or refused with its
// message.
func probe(ctx context.Context, c serverCmd, workDir, key, value string) (taken bool, msg string, err error) {
	f, err := os.CreateTemp(workDir, "probe-*.conf")
	if err != nil {
		return false, "", err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(key + " " + quote(value) + "\n" + endDirective + "\n"); err != nil {
		_ = f.Close()
		return false, "", err
	}
	if err := f.Close(); err != nil {
		return false, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := c.command(ctx, f.Name())
	cmd.Dir = workDir
	out, runErr := cmd.CombinedOutput()
	var exit *exec.ExitError
	if runErr == nil || !errors.As(runErr, &exit) {
		return false, "", fmt.Errorf("probe %s %q: the server did not stop at its config: %v\n%s", key, value, runErr, out)
	}
	text := string(out)
	m := lineRe.FindStringSubmatch(text)
	if m == nil {
		return false, "", fmt.Errorf("probe %s %q: no config error in:\n%s", key, value, out)
	}
	msg = lastLine(text)
	switch m[1] {
	case "1":
		return false, msg, nil
	case "2":
		return true, "", nil
	}
	return false, "", fmt.Errorf("probe %s %q: error at line %s: %s", key, value, m[1], msg)
}

// lastLine is the last line of the server's output that is not empty: the parser's
// message.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// quote writes v as one argument of a config line, as the operator renders values
// (valkey.QuoteConfigValue): in double quotes, with backslash and quote escaped.
func quote(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}
