package valkeyconf

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTableMatchesServer compares the generated key table with the real server on
// PATH: the keys it lists with CONFIG GET * are exactly the table's listed keys of its
// version. (hack/devtools/configtable's test compares every key's type too.)
func TestTableMatchesServer(t *testing.T) {
	bin, err := exec.LookPath("valkey-server")
	if err != nil {
		t.Skip("no valkey-server on PATH (make deps installs Valkey 8.0)")
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v: %s", bin, err, out)
	}
	m := regexp.MustCompile(`v=(\d+\.\d+\.\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("%s --version: %q", bin, out)
	}
	version, err := ParseVersion(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(Measured, version)
	if i < 0 {
		t.Skipf("valkey-server %v on PATH is not one of the measured servers %v", version, Measured)
	}
	got := configGetAll(t, bin)
	var want []string
	for k := range keyTable {
		if e, ok := on(k, i); ok && !e.unlisted {
			want = append(want, k)
		}
	}
	slices.Sort(want)
	for _, k := range want {
		if !slices.Contains(got, k) {
			t.Errorf("the table lists %s for %v; the server does not (make config-table)", k, version)
		}
	}
	for _, k := range got {
		if !slices.Contains(want, k) {
			t.Errorf("the server %v lists %s; the table does not (make config-table)", version, k)
		}
	}
	if len(want) < 200 {
		t.Errorf("the table lists %d keys for %v", len(want), version)
	}
}

// configGetAll starts bin on a unix socket (no TCP) and returns the keys of CONFIG GET *.
func configGetAll(t *testing.T, bin string) []string {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "s")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--port", "0", "--unixsocket", sock, "--dir", dir, "--save", "")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var conn net.Conn
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for conn == nil {
		var err error
		if conn, err = net.Dial("unix", sock); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the server did not listen on %s: %v", sock, err)
		case <-tick.C:
		}
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := fmt.Fprint(conn, "*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$1\r\n*\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	n, err := readHeader(r, '*')
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := 0; i < n; i++ {
		size, err := readHeader(r, '$')
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			keys = append(keys, string(buf[:size]))
		}
	}
	slices.Sort(keys)
	return keys
}

func readHeader(r *bufio.Reader, kind byte) (int, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if len(line) < 2 || line[0] != kind {
		return 0, fmt.Errorf("answer %q", line)
	}
	return strconv.Atoi(line[1:])
}
