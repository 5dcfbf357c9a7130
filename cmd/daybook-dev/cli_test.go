package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type result struct {
	code           int
	stdout, stderr string
}

func execute(t *testing.T, args ...string) result {
	t.Helper()
	var out, errw bytes.Buffer
	a := newApp(&out, &errw)
	a.localDir = t.TempDir()
	code := a.execute(context.Background(), args)
	return result{code, out.String(), errw.String()}
}

// TestExitCodesAndStreams checks the conventions of the operator's CLI
// hold here too: help on stdout with exit 0, usage errors on stderr with
// exit 2 and the usage line, runtime errors exit 1; and that the commands
// that register accounts refuse at once, starting nothing, without the
// operator CLI beside the bootstraps.
func TestExitCodesAndStreams(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     string // substring; "" means stdout must be empty
		stderr     string // substring; "" means stderr must be empty
		usageShown bool
	}{
		{"root help", []string{"--help"}, 0, "demo ", "", false},
		{"local -h", []string{"local", "drain", "--help"}, 0, "--sweep", "", false},
		{"demo -h", []string{"demo", "-h"}, 0, "--keep", "", false},
		{"version flag", []string{"--version"}, 0, "daybook-dev ", "", false},
		{"version command", []string{"version"}, 0, "daybook-dev ", "", false},
		{"no command", nil, 2, "", "daybook-dev needs a command: completion, demo, local, trace, version", true},
		{"unknown command", []string{"dmeo"}, 2, "", "did you mean demo?", true},
		{"unknown subcommand", []string{"local", "start"}, 2, "", `unknown command "start" for daybook-dev local; valid: down, drain, invoke, up`, true},
		{"operator command", []string{"status"}, 2, "", `unknown command "status" for daybook-dev`, true},
		{"bad invoke function", []string{"local", "invoke", "Nope"}, 2, "", `function "Nope": want SweeperFunction or ExporterFunction`, true},
		{"no days", []string{"demo", "--days", "0"}, 2, "", "--days and --events-per-day must be 1 or more", true},
		{"extra argument", []string{"local", "down", "x"}, 2, "", `unexpected argument "x"`, true},
		{"demo without the operator CLI", []string{"demo", "--dir", filepath.Join(empty, "demo"), "--bin", empty}, 1, "",
			"the operator CLI " + filepath.Join(empty, "daybook") + " is missing: make build puts it there", false},
		{"local up without the operator CLI", []string{"local", "up", "--dir", filepath.Join(empty, "local")}, 1, "",
			"the operator CLI " + filepath.Join(empty, "local", "bin", "daybook") + " is missing", false},
		{"local drain without a stack", []string{"local", "drain", "--dir", empty}, 1, "", "env.json does not exist: the local stack is not running: make local-up", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := execute(t, tt.args...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.code, r.stdout, r.stderr)
			}
			check := func(stream, got, want string) {
				if want == "" && got != "" {
					t.Errorf("%s should be empty, got:\n%s", stream, got)
				}
				if !strings.Contains(got, want) {
					t.Errorf("%s lacks %q:\n%s", stream, want, got)
				}
			}
			check("stdout", r.stdout, tt.stdout)
			check("stderr", r.stderr, tt.stderr)
			if tt.usageShown && (!strings.Contains(r.stderr, "usage: daybook-dev") || !strings.Contains(r.stderr, "--help' for more")) {
				t.Errorf("usage error without the usage line:\n%s", r.stderr)
			}
		})
	}
	// Refused before anything started: no state directory, no moto_server.
	for _, d := range []string{"demo", "local"} {
		if _, err := os.Stat(filepath.Join(empty, d)); !os.IsNotExist(err) {
			t.Errorf("%s: the refused command left %v", d, err)
		}
	}
}

func TestEveryCommandHasHelpAndRefusesExtraArguments(t *testing.T) {
	t.Parallel()
	root := newApp(&bytes.Buffer{}, &bytes.Buffer{}).rootCommand()
	for _, c := range root.Commands() {
		for _, leaf := range append(c.Commands(), c) {
			if leaf.Name() == "help" || leaf.Name() == "completion" || strings.HasPrefix(leaf.Name(), "__") {
				continue
			}
			path := strings.Fields(strings.TrimPrefix(leaf.CommandPath(), "daybook-dev "))
			t.Run(strings.Join(path, " "), func(t *testing.T) {
				if leaf.Short == "" || strings.Contains(leaf.Short+leaf.Long, "SPEC") {
					t.Errorf("%s: short help %q (no requirement ids in help)", leaf.CommandPath(), leaf.Short)
				}
				h := execute(t, append(path, "-h")...)
				if h.code != 0 || !strings.Contains(h.stdout, "Usage:") || h.stderr != "" {
					t.Errorf("-h: exit %d, stdout %q, stderr %q", h.code, h.stdout, h.stderr)
				}
				if leaf.HasSubCommands() || leaf.Args == nil {
					return
				}
				// Five arguments is more than any command takes.
				if r := execute(t, append(path, "x1", "x2", "x3", "x4", "x5")...); r.code != 2 {
					t.Errorf("extra arguments: exit %d, want 2\n%s", r.code, r.stderr)
				}
			})
		}
	}
}

// readmeCommands are the command lines of README.md and docs/*.md that run
// prog (after one of prefixes), comments and optional brackets dropped.
func readmeCommands(t *testing.T, prefixes ...string) [][]string {
	t.Helper()
	files, _ := filepath.Glob("../../docs/*.md")
	var out [][]string
	for _, f := range append(files, "../../README.md") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			for _, p := range prefixes {
				i := strings.Index(line, p)
				if i < 0 {
					continue
				}
				rest := line[i+len(p):]
				rest, _, _ = strings.Cut(rest, "#")
				rest, _, _ = strings.Cut(rest, "`")
				rest, _, _ = strings.Cut(rest, "&&")
				out = append(out, strings.Fields(strings.NewReplacer("[", "", "]", "").Replace(rest)))
			}
		}
	}
	return out
}

// TestREADMECommandsExist: every daybook-dev command line the README and
// the docs show names a command of this program and flags it takes.
func TestREADMECommandsExist(t *testing.T) {
	t.Parallel()
	lines := readmeCommands(t, ".local/bin/daybook-dev ", "go run ./cmd/daybook-dev ")
	if len(lines) < 3 {
		t.Fatalf("found %d daybook-dev command lines in the README", len(lines))
	}
	for _, args := range lines {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			root := newApp(&bytes.Buffer{}, &bytes.Buffer{}).rootCommand()
			c, rest, err := root.Find(args)
			if err != nil || c == root || c.HasSubCommands() {
				t.Fatalf("no such command: %v", err)
			}
			if err := c.ParseFlags(rest); err != nil {
				t.Fatalf("flags: %v", err)
			}
			if err := c.ValidateArgs(c.Flags().Args()); err != nil {
				t.Errorf("arguments: %v", err)
			}
		})
	}
}
