//go:build !noduckdb

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// catalogDoc is the page of the "Bring your own tables" steps, which
// TestBringYourOwnTablesAsWritten and the platform test run as written.
const catalogDoc = "docs/catalog.md"

// readmeLocalTry is docs/catalog.md's "Bring your own tables" step 5: the account
// file and the command lines, continuation lines joined.
func readmeLocalTry(t *testing.T) (acctFile string, commands []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, catalogDoc))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "## Bring your own tables")
	j := strings.Index(s[i:], "5. Try it on this machine")
	if i < 0 || j < 0 {
		t.Fatal(catalogDoc + ` has no "Bring your own tables" step 5`)
	}
	blocks := regexp.MustCompile("(?s)```(json|sh)\n(.*?)```").FindAllStringSubmatch(s[i+j:], 2)
	if len(blocks) != 2 || blocks[0][1] != "json" || blocks[1][1] != "sh" {
		t.Fatalf("step 5 lacks its account file and commands: %q", blocks)
	}
	for _, line := range strings.Split(strings.ReplaceAll(blocks[1][2], "\\\n", " "), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			commands = append(commands, line)
		}
	}
	return unindent(blocks[0][2]), commands
}

func unindent(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		out = append(out, strings.TrimSpace(l))
	}
	return strings.Join(out, "\n")
}

// repoRoot is the module root, found before a test changes directory.
var repoRoot = func() string {
	d, _ := filepath.Abs("../..")
	return d
}()

// readmeShell runs documented command lines as a shell would in dir:
// `export K=V`, .local/bin/daybook-dev (in-process) and .local/bin/daybook
// (the built binary), with "$VAR" from env.
type readmeShell struct {
	t   *testing.T
	ctx context.Context
	dir string
	env map[string]string
}

func (s *readmeShell) run(line string) string {
	s.t.Helper()
	args := shellWords(s.t, line, s.env)
	switch {
	case args[0] == "export" && len(args) == 2 && strings.Contains(args[1], "="):
		k, v, _ := strings.Cut(args[1], "=")
		s.env[k] = v
		return ""
	case args[0] == ".local/bin/daybook-dev":
		var out, errw bytes.Buffer
		if code := newApp(&out, &errw).execute(s.ctx, args[1:]); code != 0 {
			s.t.Fatalf("%s: exit %d\n%s%s", line, code, out.String(), errw.String())
		}
		return out.String()
	case args[0] == ".local/bin/daybook", args[0] == "daybook":
		// daybook is the installed CLI; make build writes the same
		// binary to .local/bin.
		return s.daybook(args[1:]...)
	}
	s.t.Fatalf("documented command %q: not a daybook command", line)
	return ""
}

// daybook runs the built operator CLI with the shell's exports.
func (s *readmeShell) daybook(args ...string) string {
	s.t.Helper()
	out, errw, err := s.try(args...)
	if err != nil {
		s.t.Fatalf("daybook %s: %v\n%s%s", strings.Join(args, " "), err, out, errw)
	}
	return out
}

// try runs the built operator CLI and returns what it wrote and how it
// exited.
func (s *readmeShell) try(args ...string) (stdout, stderr string, err error) {
	var out, errw bytes.Buffer
	cmd := exec.CommandContext(s.ctx, filepath.Join(s.dir, ".local", "bin", operatorName), args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = s.dir, &out, &errw
	cmd.Env = os.Environ()
	for k, v := range s.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	err = cmd.Run()
	return out.String(), errw.String(), err
}

// shellWords splits a command line on spaces, keeping double-quoted words
// whole and expanding "$VAR" inside them.
func shellWords(t *testing.T, line string, env map[string]string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	quoted, in := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '"':
			quoted, in = !quoted, true
		case c == ' ' && !quoted:
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case c == '$' && quoted:
			j := i + 1
			for j < len(line) && (line[j] == '_' || line[j] >= 'A' && line[j] <= 'Z') {
				j++
			}
			v, ok := env[line[i+1:j]]
			if !ok {
				t.Fatalf("documented command %q: $%s is not set", line, line[i+1:j])
			}
			cur.WriteString(v)
			i = j - 1
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quoted {
		t.Fatalf("documented command %q: unbalanced quote", line)
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}
