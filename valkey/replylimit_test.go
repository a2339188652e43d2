package valkey_test

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/valkey-operator/valkey-operator/valkey"
)

func TestScanReplies(t *testing.T) {
	bulk20 := "$20\r\n" + strings.Repeat("x", 20) + "\r\n" // costs 5 + 20 + 2 = 27
	tests := []struct {
		name  string
		in    string
		limit int64
		ends  []int
		taken int // -1: the whole input
		err   error
	}{
		{"simple string", "+OK\r\n", 0, []int{5}, -1, nil},
		{"error", "-ERR no such key\r\n", 0, []int{18}, -1, nil},
		{"integers", ":42\r\n:-7\r\n", 0, []int{5, 10}, -1, nil},
		{"bulk string", "$3\r\nabc\r\n", 0, []int{9}, -1, nil},
		{"bulk string with CRLF inside", "$4\r\na\r\nb\r\n", 0, []int{10}, -1, nil},
		{"empty and nil bulk strings", "$0\r\n\r\n$-1\r\n", 0, []int{6, 11}, -1, nil},
		{"empty and nil arrays", "*0\r\n*-1\r\n", 0, []int{4, 9}, -1, nil},
		{"array of mixed elements", "*3\r\n$1\r\na\r\n:1\r\n+b\r\n", 0, []int{19}, -1, nil},
		{"nested arrays", "*2\r\n*1\r\n+a\r\n*0\r\n+next\r\n", 0, []int{16, 23}, -1, nil},
		{"a reply that has not ended", "*2\r\n+a\r\n", 0, nil, -1, nil},
		{"a length line not whole yet", "+a\r\n*12", 0, []int{4}, 4, nil},
		{"bulk content not all there yet", "$10\r\nabc", 0, nil, -1, nil},

		{"RESP3 map", "%1\r\n+a\r\n+b\r\n", 0, nil, 0, valkey.ErrMalformedReply},
		{"RESP3 null", "_\r\n", 0, nil, 0, valkey.ErrMalformedReply},
		{"negative length", "$-2\r\n", 0, nil, 0, valkey.ErrMalformedReply},
		{"negative array length", "*-5\r\n", 0, nil, 0, valkey.ErrMalformedReply},
		{"signed length", "$+3\r\nabc\r\n", 0, nil, 0, valkey.ErrMalformedReply},
		{"empty length", "*\r\n", 0, nil, 0, valkey.ErrMalformedReply},
		{"length line without CR", "+a\r\n*1\n+b\r\n", 0, []int{4}, 4, valkey.ErrMalformedReply},
		{"simple string without CR", "+OK\n", 0, nil, 1, valkey.ErrMalformedReply},
		{"length line too long", "$" + strings.Repeat("0", 30) + "1\r\n", 0, nil, 0, valkey.ErrMalformedReply},
		{"length line too long, not whole yet", "*" + strings.Repeat("1", 30), 0, nil, 0, valkey.ErrMalformedReply},
		{"integer that is not a number", ":12a\r\n", 0, nil, 0, valkey.ErrMalformedReply},
		{"length out of range", "$99999999999999999999\r\n", 0, nil, 0, valkey.ErrMalformedReply},
		{"nesting deeper than 32", strings.Repeat("*1\r\n", 33) + ":1\r\n", 0, nil, 32 * 4, valkey.ErrMalformedReply},
		{"nesting of 32", strings.Repeat("*1\r\n", 32) + ":1\r\n", 0, []int{32*4 + 4}, -1, nil},

		{"bulk string within the budget", bulk20, 27, []int{27}, -1, nil},
		{"bulk string announced over the budget: refused at its length line", bulk20, 26, nil, 0, valkey.ErrReplyTooLarge},
		{"huge bulk string announced", "$4611686018427387904\r\n", 8 << 20, nil, 0, valkey.ErrReplyTooLarge},
		{"array announced over the budget", "*2\r\n:1\r\n:2\r\n", 4 + 2*64 - 1, nil, 0, valkey.ErrReplyTooLarge},
		{"huge array announced", "*4611686018427387904\r\n", 8 << 20, nil, 0, valkey.ErrReplyTooLarge},
		{"many small elements add up", "*3\r\n" + bulk20 + bulk20 + bulk20, 4 + 3*64 + 2*27, nil, 4 + 2*27, valkey.ErrReplyTooLarge},
		{"many small elements that fit", "*3\r\n" + bulk20 + bulk20 + bulk20, 4 + 3*64 + 3*27, []int{4 + 3*27}, -1, nil},
		{"a long simple string", "+" + strings.Repeat("a", 100) + "\r\n", 50, nil, 1, valkey.ErrReplyTooLarge},
		{"the budget starts again with each reply", bulk20 + bulk20, 27, []int{27, 54}, -1, nil},
		{"the second reply over the budget", bulk20 + "$21\r\n", 27, []int{27}, 27, valkey.ErrReplyTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, piece := range []int{len(tt.in), 1, 3, 7} {
				ends, taken, err := valkey.ScanReplies([]byte(tt.in), slices.Repeat([]int{piece}, len(tt.in)), tt.limit)
				if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
					t.Fatalf("pieces of %d: error %v, want %v", piece, err, tt.err)
				}
				if tt.ends == nil {
					tt.ends = []int{}
				}
				if ends == nil {
					ends = []int{}
				}
				if !slices.Equal(ends, tt.ends) {
					t.Fatalf("pieces of %d: replies end at %v, want %v", piece, ends, tt.ends)
				}
				want := tt.taken
				if want < 0 {
					want = len(tt.in)
				}
				// A simple string is taken as it comes: in pieces, more of it is taken
				// before its end shows it is malformed or over the budget.
				asItComes := strings.HasPrefix(tt.name, "simple string") || strings.HasPrefix(tt.name, "a long simple string")
				if taken != want && (piece == len(tt.in) || !asItComes || (tt.limit > 0 && taken > int(tt.limit))) {
					t.Fatalf("pieces of %d: took %d bytes, want %d", piece, taken, want)
				}
			}
		})
	}
}

func TestLimitConn(t *testing.T) {
	keys := "*2\r\n$300\r\n" + strings.Repeat("k", 300) + "\r\n$300\r\n" + strings.Repeat("k", 300) + "\r\n" // costs 4+128+2*308 = 748
	getKeys := []string{"CLUSTER", "GETKEYSINSLOT", "7", "200"}
	one := func(args ...string) [][]string { return [][]string{args} }
	tests := []struct {
		name    string
		writes  [][][]string // the commands of each write
		replies string
		limit   int64
		got     int // bytes the reader gets
		err     error
		command string // of the *ReplyTooLargeError
	}{
		{"a reply that fits", [][][]string{{getKeys}}, keys, 1024, len(keys), io.EOF, ""},
		{"a reply over the limit names its command", [][][]string{one("ACL", "LIST")}, "*1\r\n$2000\r\n", 1024, 4, valkey.ErrReplyTooLarge, "ACL LIST"},
		{"the replies of a pipeline count together", [][][]string{{getKeys, getKeys}}, keys + keys, 1024, len(keys) + 4, valkey.ErrReplyTooLarge, "CLUSTER GETKEYSINSLOT"},
		{"commands written apart count apart", [][][]string{{getKeys}, {getKeys}}, keys + keys, 1024, 2 * len(keys), io.EOF, ""},
		{"the budget starts again after a pipeline", [][][]string{one("PING")}, "+PONG\r\n" + keys + keys, 1024, 7 + 2*len(keys), io.EOF, ""},
		{"a reply with no command pending", nil, "$2000\r\n", 1024, 0, valkey.ErrReplyTooLarge, "a reply"},
		{"arguments other than a subcommand are never named", [][][]string{one("AUTH", "_operator", "s3cr3t-password")}, "$2000\r\n", 1024, 0, valkey.ErrReplyTooLarge, "AUTH"},
		{"the subcommand of a container", [][][]string{one("config", "get", "maxmemory-policy")}, "*1000\r\n", 1024, 0, valkey.ErrReplyTooLarge, "CONFIG GET"},
		{"a malformed reply", [][][]string{one("PING")}, "+PONG\r\n%1\r\n", 1024, 7, valkey.ErrMalformedReply, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, piece := range []int{len(tt.replies), 1, 5} {
				got, err := valkey.ReadLimited([]byte(tt.replies), slices.Repeat([]int{piece}, len(tt.replies)), tt.limit, tt.writes...)
				if !errors.Is(err, tt.err) {
					t.Fatalf("pieces of %d: error %v, want %v", piece, err, tt.err)
				}
				if !bytes.Equal(got, []byte(tt.replies[:tt.got])) {
					t.Fatalf("pieces of %d: the reader got %d bytes, want %d", piece, len(got), tt.got)
				}
				if tt.command == "" {
					continue
				}
				e := valkey.AsReplyTooLarge(err)
				if e == nil || e.Command != tt.command || e.Addr != "server:6379" || e.Limit != tt.limit {
					t.Fatalf("pieces of %d: %#v, want command %q", piece, e, tt.command)
				}
				if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "_operator") {
					t.Fatalf("an argument is in the error: %v", err)
				}
			}
		})
	}
}

// Requests are matched to replies whatever the writes they come in: a length line split
// between two writes, several commands in one.
func TestLimitConnRequests(t *testing.T) {
	cmds := [][]string{{"ACL", "LIST"}, {"cluster", "getkeysinslot", "12", "200"}, {"MIGRATE", "10.0.0.1", "6379", "", "0", "5000", "AUTH2", "_operator", "s3cr3t"}}
	tests := []struct {
		name  string
		sizes []int
		want  []string
	}{
		{"one write", nil, []string{"ACL LIST@1", "CLUSTER GETKEYSINSLOT@1", "MIGRATE@1"}},
		{"a length line cut in two", []int{1, 2}, []string{"ACL LIST@3", "CLUSTER GETKEYSINSLOT@3", "MIGRATE@3"}},
		{"a write per command", []int{23, 54}, []string{"ACL LIST@1", "CLUSTER GETKEYSINSLOT@2", "MIGRATE@3"}},
		{"byte by byte", slices.Repeat([]int{1}, 200), []string{"ACL LIST@23", "CLUSTER GETKEYSINSLOT@77", "MIGRATE@179"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := valkey.Pending(cmds, tt.sizes...); !slices.Equal(got, tt.want) {
				t.Fatalf("pending %v, want %v", got, tt.want)
			}
		})
	}
}

func TestReplyTooLargeError(t *testing.T) {
	err := error(&valkey.ReplyTooLargeError{Addr: "10.0.0.5:6379", Command: "ACL LIST", Limit: 8 << 20})
	if got := err.Error(); got != "10.0.0.5:6379 answered ACL LIST with more than 8 MiB" {
		t.Errorf("Error() = %q", got)
	}
	if got := valkey.AsReplyTooLarge(err).Describe("vk-abc12"); got != "member vk-abc12 answered ACL LIST with more than 8 MiB" {
		t.Errorf("Describe() = %q", got)
	}
	if !errors.Is(err, valkey.ErrReplyTooLarge) || valkey.AsReplyTooLarge(errors.New("other")) != nil {
		t.Error("errors.Is / AsReplyTooLarge")
	}
	for n, want := range map[int64]string{8 << 20: "8 MiB", 64 << 10: "64 KiB", 1000: "1000 bytes", 1536 << 10: "1536 KiB"} {
		if got := valkey.FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
