// Package docscheck holds the project's rules for its Markdown docs (README.md and every
// .md file under docs/): a doc says what is true now, with the command that shows it, and
// every relative link it holds leads somewhere.
//
//   - No date (YYYY-MM-DD) and no commit hash (7 to 40 hex digits, with a digit and a
//     letter among them) outside fenced code blocks: runs of the past go to CHANGELOG.md,
//     which the check does not read, and measured figures with their commit and date to
//     docs/benchmarks.md, the one doc exempt from this rule (Exempt).
//   - A relative link names a file of the repository, and its #fragment a heading of that
//     file, as GitHub makes the heading's anchor.
package docscheck

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Exempt are the docs, relative to the root, where dates and commit hashes belong: the
// measured figures name the commit and the day they were taken at.
var Exempt = map[string]bool{"docs/benchmarks.md": true}

// Violation is one line of a doc that breaks a rule.
type Violation struct {
	File string // relative to the root, with slashes
	Line int
	Rule string
	Text string // what the rule found
}

func (v Violation) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", v.File, v.Line, v.Rule, v.Text)
}

// The rules' names, as a violation states them.
const (
	RuleDate   = "a date (history goes to CHANGELOG.md, figures to docs/benchmarks.md)"
	RuleCommit = "a commit hash (history goes to CHANGELOG.md, figures to docs/benchmarks.md)"
	RuleLink   = "a link that leads nowhere"
)

var (
	// date is a calendar date; the characters around it are checked apart (boundary).
	date = regexp.MustCompile(`(?:19|20)\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])`)
	// hexWord is a candidate commit hash: a run of lower-case hex digits.
	hexWord = regexp.MustCompile(`[0-9a-f]{7,40}`)
	// link is an inline Markdown link or image: [text](target) or [text](target "title").
	link = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// inlineCode is a code span, whose text is no link.
	inlineCode = regexp.MustCompile("`[^`]*`")
)

// Docs lists the docs the rules apply to, relative to root: README.md and the .md files
// under docs/, sorted.
func Docs(root string) ([]string, error) {
	var docs []string
	if _, err := os.Stat(filepath.Join(root, "README.md")); err == nil {
		docs = append(docs, "README.md")
	}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			docs = append(docs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the docs of %s: %w", root, err)
	}
	sort.Strings(docs)
	return docs, nil
}

// Check applies the rules to every doc of the repository at root.
func Check(root string) ([]Violation, error) {
	docs, err := Docs(root)
	if err != nil {
		return nil, err
	}
	anchors := map[string]map[string]bool{}
	var vs []Violation
	for _, doc := range docs {
		lines, err := readLines(filepath.Join(root, doc))
		if err != nil {
			return nil, err
		}
		if !Exempt[doc] {
			vs = append(vs, history(doc, lines)...)
		}
		lvs, err := links(root, doc, lines, anchors)
		if err != nil {
			return nil, err
		}
		vs = append(vs, lvs...)
	}
	return vs, nil
}

// history finds the dates and commit hashes of a doc's prose.
func history(doc string, lines []string) []Violation {
	var vs []Violation
	for i, line := range prose(lines) {
		for _, m := range date.FindAllStringIndex(line, -1) {
			if boundary(line, m) {
				vs = append(vs, Violation{File: doc, Line: i + 1, Rule: RuleDate, Text: line[m[0]:m[1]]})
			}
		}
		for _, m := range hexWord.FindAllStringIndex(line, -1) {
			if w := line[m[0]:m[1]]; boundary(line, m) && strings.ContainsAny(w, "0123456789") && strings.ContainsAny(w, "abcdef") {
				vs = append(vs, Violation{File: doc, Line: i + 1, Rule: RuleCommit, Text: w})
			}
		}
	}
	return vs
}

// boundary tells whether the match m of line stands alone: not inside a longer word, a
// path or a name (before-upgrade-1a2b3c4d, sha256:..., 1a2b3c4d.rdb) or a number.
func boundary(line string, m []int) bool {
	word := func(c byte) bool {
		return c == '-' || c == '_' || c == '/' || c < unicode.MaxASCII && (unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c)))
	}
	if m[0] > 0 {
		if c := line[m[0]-1]; word(c) || c == '.' || c == ':' {
			return false
		}
	}
	if m[1] < len(line) {
		c := line[m[1]]
		if word(c) || c == '.' && m[1]+1 < len(line) && line[m[1]+1] != ' ' {
			return false
		}
	}
	return true
}

// prose returns the lines with those of fenced code blocks blanked: commands and their
// output may hold dates and hashes (an IAM policy's version, an example object's name).
func prose(lines []string) []string {
	out := make([]string, len(lines))
	fence := ""
	for i, line := range lines {
		t := strings.TrimLeft(line, " ")
		switch {
		case fence == "" && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
			fence = t[:3]
		case fence != "" && strings.HasPrefix(t, fence):
			fence = ""
		case fence == "":
			out[i] = line
		}
	}
	return out
}

// links checks the relative links of a doc's prose: the file exists, and a fragment
// names a heading of the Markdown file it points at. anchors caches each file's
// headings.
func links(root, doc string, lines []string, anchors map[string]map[string]bool) ([]Violation, error) {
	var vs []Violation
	for i, line := range prose(lines) {
		line = inlineCode.ReplaceAllString(line, "")
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(doc), file)))
				if strings.HasPrefix(path, "../") {
					vs = append(vs, Violation{File: doc, Line: i + 1, Rule: RuleLink, Text: target + " (outside the repository)"})
					continue
				}
				if _, err := os.Stat(filepath.Join(root, path)); err != nil {
					vs = append(vs, Violation{File: doc, Line: i + 1, Rule: RuleLink, Text: target + " (no such file)"})
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			as, ok := anchors[path]
			if !ok {
				hl, err := readLines(filepath.Join(root, path))
				if err != nil {
					return nil, err
				}
				as = Anchors(hl)
				anchors[path] = as
			}
			if !as[frag] {
				vs = append(vs, Violation{File: doc, Line: i + 1, Rule: RuleLink, Text: target + " (no such heading)"})
			}
		}
	}
	return vs, nil
}

// Anchors returns the anchors GitHub gives the headings of a Markdown file: the heading's
// text in lower case, without its Markdown, with every character but letters, digits,
// '-' and '_' removed and spaces turned into '-'; a repeated anchor gets "-1", "-2", ...
func Anchors(lines []string) map[string]bool {
	as := map[string]bool{}
	seen := map[string]int{}
	for _, line := range prose(lines) {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimLeft(line, "#")
		if text == "" || text[0] != ' ' {
			continue
		}
		a := slug(strings.TrimSpace(text))
		if n := seen[a]; n > 0 {
			as[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			as[a] = true
		}
		seen[a]++
	}
	return as
}

// slug is GitHub's anchor of a heading's text.
func slug(text string) string {
	// A link in a heading counts by its text.
	text = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

func readLines(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read doc: %w", err)
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}
