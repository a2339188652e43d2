// Package jobapi is the contract between the backup-controller and the program of its
// Jobs: the subcommands, the environment a Job gets its store credentials from, and the
// Result a Job leaves as its container's termination message. It imports no store SDK:
// the controller builds Jobs and reads their Results with it alone.
//
// Invariants: a Result read by the controller came from at most MaxTerminationMessage
// bytes, its reason is a short word, and its message is at most MaxMessage characters of
// printable text, from which the Job removed its credentials.
package jobapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/valkey-operator/valkey-operator/backup-controller/internal/layout"
	"github.com/valkey-operator/valkey-operator/valkeyconf/redact"
)

// Subcommands of the backup-controller binary that run a Job's work.
const (
	// CmdBackup takes one shard's snapshot into the store.
	CmdBackup = "backup"
	// CmdRestoreFetch downloads and checks one shard's snapshot (it reads the manifest).
	CmdRestoreFetch = "restore-fetch"
	// CmdRestoreLoad copies the keys of a private server into the cluster.
	CmdRestoreLoad = "restore-load"
	// CmdStoreProbe checks that the store answers to the credentials.
	CmdStoreProbe = "store-probe"
	// CmdManifestWrite writes a backup's manifest from a mounted file.
	CmdManifestWrite = "manifest-write"
	// CmdManifestRead reads and checks a backup's manifest and reports its Summary.
	CmdManifestRead = "manifest-read"
	// CmdStoreDelete deletes a backup's objects, the manifest first.
	CmdStoreDelete = "store-delete"
)

// Commands are every subcommand.
var Commands = []string{CmdBackup, CmdRestoreFetch, CmdRestoreLoad, CmdStoreProbe, CmdManifestWrite, CmdManifestRead, CmdStoreDelete}

// Environment variables of the store's credentials (from the user's Secret).
const (
	EnvAccessKeyID     = "AWS_ACCESS_KEY_ID"
	EnvSecretAccessKey = "AWS_SECRET_ACCESS_KEY"
)

// Reasons of a store error.
const (
	// ReasonStoreUnreachable: the endpoint does not answer, TLS fails, the store errs.
	ReasonStoreUnreachable = "ObjectStoreUnreachable"
	// ReasonAccessDenied: the store refused the credentials or the permission.
	ReasonAccessDenied = "AccessDenied"
	// ReasonNotFound: no such object or bucket.
	ReasonNotFound = "NotFound"
	// ReasonEndpointRefused: the operator's object-store endpoint policy refused the
	// address the endpoint resolved to; the Job connected nowhere.
	ReasonEndpointRefused = "EndpointRefused"
)

// Reasons of a Result beyond the store's.
const (
	// ReasonSourceLost: the server went away or broke the link mid-transfer; another
	// member may serve a new attempt.
	ReasonSourceLost = "SourceLost"
	// ReasonSourceNotInSync: the replica's own link to its primary is down.
	ReasonSourceNotInSync = "SourceNotInSync"
	// ReasonAuthFailed: the server refused the user's password (for example during a
	// rotation of the system passwords); a new attempt may pass.
	ReasonAuthFailed = "AuthenticationFailed"
	// ReasonRefused: the server refused the handshake (ACL).
	ReasonRefused = "Refused"
	// ReasonChecksumMismatch: an object, or the manifest, is not what it must be.
	ReasonChecksumMismatch = "ChecksumMismatch"
	// ReasonLoadFailed: the private server did not load the snapshot.
	ReasonLoadFailed = "LoadFailed"
	// ReasonRestoreFailed: the cluster refused keys.
	ReasonRestoreFailed = "RestoreFailed"
	// ReasonInvalid: the Job's own arguments are wrong (an operator bug).
	ReasonInvalid = "InvalidArguments"
)

// Bounds of what a Job reports.
const (
	// MaxTerminationMessage is what Kubernetes keeps of a termination message.
	MaxTerminationMessage = 4096
	// MaxMessage bounds a Result's message, which may reach a condition or an event.
	MaxMessage = 256
)

// Result is a Job's outcome, its container's termination message.
type Result struct {
	// Reason is empty on success.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Of a backup.
	Object        string `json:"object,omitempty"`
	Size          int64  `json:"size,omitempty"`
	SHA256        string `json:"sha256,omitempty"`
	Keys          int64  `json:"keys,omitempty"`
	RDBVersion    int    `json:"rdbVersion,omitempty"`
	ValkeyVersion string `json:"valkeyVersion,omitempty"`
	Role          string `json:"role,omitempty"`
	// Of a restore: keys written, and keys that expired before they could be.
	Restored int64 `json:"restored,omitempty"`
	Expired  int64 `json:"expired,omitempty"`
	// Of a manifest read.
	Manifest *layout.Summary `json:"manifest,omitempty"`
	// Of a deletion: the objects deleted.
	Objects int64 `json:"objects,omitempty"`
}

// Encode is the termination message of r, its message cleaned.
func (r Result) Encode() []byte {
	r.Message = CleanMessage(r.Message)
	out, _ := json.Marshal(r)
	return out
}

// ParseResult reads a termination message. It refuses one longer than Kubernetes keeps
// or with a reason that is not a short word, and cleans the message.
func ParseResult(msg string) (Result, error) {
	var r Result
	if len(msg) > MaxTerminationMessage {
		return r, fmt.Errorf("the termination message has %d bytes, more than %d", len(msg), MaxTerminationMessage)
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(msg)), &r); err != nil {
		return r, fmt.Errorf("parse the termination message: %w", err)
	}
	if !isWord(r.Reason) {
		return Result{}, errors.New("the termination message has no valid reason")
	}
	r.Message = CleanMessage(r.Message)
	for _, s := range []*string{&r.Object, &r.SHA256, &r.ValkeyVersion, &r.Role} {
		*s = clip(*s, 256)
	}
	if r.Manifest != nil {
		r.Manifest.ValkeyVersion = clip(r.Manifest.ValkeyVersion, 32)
	}
	return r, nil
}

// isWord: empty, or up to 64 ASCII letters.
func isWord(s string) bool {
	if len(s) > 64 {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return true
}

// CleanMessage makes s fit a condition: printable text (control characters become
// spaces, invalid UTF-8 is dropped), at most MaxMessage characters, with what a server
// may quote of a secret removed (redact.Text: a Job's message is a server's text).
func CleanMessage(s string) string {
	s = redact.Text(strings.ToValidUTF8(s, ""))
	s = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return ' '
		}
		return r
	}, s)
	return clip(strings.TrimSpace(s), MaxMessage)
}

// clip cuts s to n characters, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	runes := []rune(s)
	return string(runes[:n-3]) + "..."
}

// Redact removes secrets from s with redact.Text: what a server may quote (a config
// line, an ACL password, AUTH arguments) and every occurrence of the secrets given;
// secrets shorter than 4 bytes are not looked for (they would match ordinary text).
func Redact(s string, secrets ...string) string {
	var known []string
	for _, sec := range secrets {
		if len(sec) >= 4 {
			known = append(known, sec)
		}
	}
	return redact.Text(s, known...)
}
