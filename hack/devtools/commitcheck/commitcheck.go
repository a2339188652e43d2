// Package commitcheck holds the project's rule for commit messages: a subject (what
// `git log --oneline` shows: the message's first paragraph) of at most MaxSubject
// characters. History committed before Cutoff keeps its longer subjects, since published
// commits are not rewritten; everything committed after it, on any branch merged into the
// checked one, is held to the rule. The rule needs only the commits and their dates, so
// it works the same on a branch, on main in CI's fresh clone, and in a shallow clone.
package commitcheck

import (
	"bytes"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxSubject is the longest subject the project takes, in characters.
const MaxSubject = 72

// Cutoff is the committer time of b4f45f4 (backup test: apply cluster status as its
// controllers do), main when the check came in: commits committed after it are checked.
var Cutoff = time.Unix(1796522007, 0).UTC()

// Violation is a commit whose subject is too long.
type Violation struct {
	Commit  string
	Subject string
}

func (v Violation) String() string {
	return fmt.Sprintf("commit %.12s: subject of %d characters (at most %d): %s",
		v.Commit, utf8.RuneCountInString(v.Subject), MaxSubject, v.Subject)
}

// Check lists the commits reachable from rev in the repository at dir, committed after
// since, whose subject is longer than MaxSubject, newest first.
func Check(dir, rev string, since time.Time) ([]Violation, error) {
	cmd := exec.Command("git", "-C", dir, "log", "--format=%H%x00%ct%x00%s%x00", rev, "--")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("list the commits of %s: %w: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	fields := strings.Split(string(out), "\x00")
	var vs []Violation
	for i := 0; i+2 < len(fields); i += 3 {
		hash, subject := strings.TrimSpace(fields[i]), fields[i+2]
		ct, err := strconv.ParseInt(fields[i+1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("read the date of commit %s: %w", hash, err)
		}
		if !time.Unix(ct, 0).After(since) {
			continue
		}
		if utf8.RuneCountInString(subject) > MaxSubject {
			vs = append(vs, Violation{Commit: hash, Subject: subject})
		}
	}
	return vs, nil
}
