package depscheck

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// builtins are the shell's own commands and keywords; they need no program.
var builtins = map[string]bool{}

func init() {
	for _, b := range strings.Fields(`: . [ alias bg bind break builtin caller cd command compgen complete
		continue declare dirs disown echo enable eval exec exit export false fc fg getopts hash help
		history jobs kill let local logout mapfile popd printf pushd pwd read readarray readonly return
		set shift shopt source suspend test times trap true type typeset ulimit umask unalias unset wait`) {
		builtins[b] = true
	}
}

// prefixes run the command that follows them; after their own options (and, for
// timeout and flock, one operand), the next word is a program too.
var prefixes = map[string]int{"exec": 0, "command": 0, "env": 0, "nohup": 0, "xargs": 0, "timeout": 1, "flock": 1, "time": 0}

// ScanShell scans a shell script (relative to root).
func ScanShell(root, rel string, res *Result) error {
	src, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return err
	}
	return scanShellSource(rel, src, 0, res)
}

// scanShellSource parses src as bash; lineOffset is added to the reported lines.
func scanShellSource(rel string, src []byte, lineOffset int, res *Result) error {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(bytes.NewReader(src), rel)
	if err != nil {
		return fmt.Errorf("parse %s: %w", rel, err)
	}
	funcs := map[string]bool{}
	syntax.Walk(f, func(n syntax.Node) bool {
		if fd, ok := n.(*syntax.FuncDecl); ok {
			funcs[fd.Name.Value] = true
		}
		return true
	})
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		words := call.Args
		for len(words) > 0 {
			w, ok := wordProgram(words[0])
			site := Site{File: rel, Line: int(words[0].Pos().Line()) + lineOffset}
			if !ok || w == "" {
				return true
			}
			if builtins[w] && w != "exec" && w != "command" || funcs[w] {
				if _, pre := prefixes[w]; !pre {
					return true
				}
			}
			if !builtins[w] && !funcs[w] && !projectPath(w) {
				res.add(w, site)
			}
			skip, pre := prefixes[w]
			if !pre {
				return true
			}
			words = words[1:]
			for len(words) > 0 {
				lit := words[0].Lit()
				if strings.HasPrefix(lit, "-") || (w == "env" && strings.Contains(lit, "=")) {
					words = words[1:]
					continue
				}
				break
			}
			for ; skip > 0 && len(words) > 0; skip-- {
				words = words[1:]
			}
		}
		return true
	})
	return nil
}

// wordProgram reads a command word: a literal, or a variable followed by /name (whose
// base name is the program). ok is false for words that cannot be read (a bare variable).
func wordProgram(w *syntax.Word) (string, bool) {
	if lit := w.Lit(); lit != "" {
		return lit, true
	}
	// "$X/name", ${X}/name, $(X)/name (a Makefile variable, rewritten by ScanMakefile).
	var last string
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			last = p.Value
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					last = l.Value
				}
			}
		}
	}
	// One segment after the variable ($(TOOLS_BIN)/helm) names a tool; more ($ROOT/hack/x.sh,
	// $ROOT/bin/localkube) a file of the project.
	if strings.HasPrefix(last, "/") && len(last) > 1 {
		if strings.Count(last, "/") > 1 {
			return "./" + strings.TrimPrefix(last, "/"), true
		}
		return path.Base(last), true
	}
	return "", false
}

// projectPath: a relative path with a slash (hack/x.sh, ./bin/y) is one of the project's
// own programs.
func projectPath(w string) bool {
	return strings.Contains(w, "/") && !strings.HasPrefix(w, "/")
}

var (
	makeShell = regexp.MustCompile(`\$\(shell ([^()]*(\([^()]*\))*[^()]*)\)`)
	makeVar   = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	// makeFunc is an innermost call of one of make's text functions; it stands for a word.
	makeFunc = regexp.MustCompile(`\$\((if|or|and|filter|filter-out|subst|patsubst|wildcard|notdir|dir|basename|addprefix|addsuffix|foreach|abspath|firstword|lastword|word|words|strip|findstring|sort) [^()]*\)`)
)

// ScanMakefile scans the recipes of a Makefile and its $(shell ...) calls.
func ScanMakefile(root, rel string, res *Result) error {
	src, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return err
	}
	lines := strings.Split(string(src), "\n")
	for i := 0; i < len(lines); i++ {
		start := i
		line := lines[i]
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, "\\") + " " + strings.TrimLeft(lines[i], "\t ")
		}
		var scripts []string
		if strings.HasPrefix(line, "\t") {
			scripts = append(scripts, strings.TrimLeft(strings.TrimPrefix(line, "\t"), "@-+"))
		}
		for _, m := range makeShell.FindAllStringSubmatch(line, -1) {
			scripts = append(scripts, m[1])
		}
		for _, sc := range scripts {
			// Make variables become shell variables; $$ is the shell's $.
			sc = strings.ReplaceAll(sc, "$$", "\x00")
			sc = makeVar.ReplaceAllString(sc, "$${$1}")
			for makeFunc.MatchString(sc) {
				sc = makeFunc.ReplaceAllString(sc, "MAKEFUNC")
			}
			sc = strings.ReplaceAll(sc, "\x00", "$")
			if err := scanShellSource(rel, []byte(sc+"\n"), start, res); err != nil {
				return err
			}
		}
	}
	return nil
}
