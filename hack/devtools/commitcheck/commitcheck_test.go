package commitcheck

import (
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestCheckAFixtureRepository builds a repository in a temporary folder whose history
// crosses the cut-off, with a side branch merged after it, and checks its main.
func TestCheckAFixtureRepository(t *testing.T) {
	since := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	before, after := since.Add(-time.Hour), since.Add(time.Hour)
	long := strings.Repeat("x", 100)
	exactly := strings.Repeat("a", MaxSubject)
	r := fixture(t)
	r.commit(before, "old history: "+long)
	r.git(before, "checkout", "-q", "-b", "side")
	r.commit(before.Add(time.Minute), "side branch before the cut-off: "+long)
	r.commit(after.Add(time.Minute), "side branch after the cut-off: "+long)
	r.git(after, "checkout", "-q", "main")
	r.commit(after.Add(2*time.Minute), exactly)
	r.commit(after.Add(3*time.Minute), exactly+"b")
	r.commit(after.Add(4*time.Minute), strings.Repeat("é", MaxSubject))
	r.commit(after.Add(5*time.Minute), "a first line\nwrapped into the subject without a blank line: "+long+"\n\nbody "+long)
	r.commit(after.Add(6*time.Minute), "a short subject\n\nand a long body "+long)
	r.git(after.Add(7*time.Minute), "merge", "-q", "--no-ff", "-m", "Merge branch 'side' with a subject far too long: "+long, "side")

	vs, err := Check(r.dir, "HEAD", since)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vs {
		got = append(got, v.Subject)
	}
	want := []string{
		"Merge branch 'side' with a subject far too long: " + long,
		"a first line wrapped into the subject without a blank line: " + long,
		exactly + "b",
		"side branch after the cut-off: " + long,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("violations\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(vs) > 2 {
		msg := vs[2].String()
		if wantMsg := fmt.Sprintf("commit %.12s: subject of 73 characters (at most 72): %s", vs[2].Commit, exactly+"b"); msg != wantMsg {
			t.Errorf("message %q, want %q", msg, wantMsg)
		}
	}

	vs, err = Check(r.dir, "HEAD~1", since)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 {
		t.Errorf("main before the merge: %v, want the two of main's own", vs)
	}
}

func TestCheckOutsideARepository(t *testing.T) {
	_, err := Check(t.TempDir(), "HEAD", Cutoff)
	if err == nil || !strings.Contains(err.Error(), "list the commits of") {
		t.Errorf("error %v", err)
	}
}

type repo struct {
	t   *testing.T
	dir string
}

func fixture(t *testing.T) repo {
	r := repo{t: t, dir: t.TempDir()}
	r.git(time.Now(), "init", "-q", "-b", "main")
	return r
}

// commit records an empty commit with message msg, authored and committed at at.
func (r repo) commit(at time.Time, msg string) {
	r.git(at, "commit", "-q", "--allow-empty", "-m", msg)
}

func (r repo) git(at time.Time, args ...string) {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	date := at.Format(time.RFC3339)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}
