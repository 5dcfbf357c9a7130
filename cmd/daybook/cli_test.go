package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/cli"
)

var appSeq atomic.Int64

// testNow is the clock of command tests that do not need the real one.
var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// testApp is the CLI with a fixed clock, randomness seeded from the test's
// name, no terminal, an empty environment and a state directory of its own.
func testApp(t *testing.T) (*app, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	a := newApp(&stdout, &stderr)
	a.now = func() time.Time { return testNow }
	// Seeded from the test's name and a counter: two apps of one test make
	// different account ids.
	a.rand = rand.NewChaCha8(sha256.Sum256([]byte(fmt.Sprint(t.Name(), "/", appSeq.Add(1)))))
	a.getenv = func(string) string { return "" }
	a.terminal = func(io.Writer) bool { return false }
	a.osUser = func() string { return "tester" }
	a.localDir = t.TempDir()
	a.demoDir = t.TempDir()
	return a, &stdout, &stderr
}

type result struct {
	code           int
	stdout, stderr string
}

func execute(t *testing.T, a *app, args ...string) result {
	t.Helper()
	out, errw := a.stdout.(*bytes.Buffer), a.stderr.(*bytes.Buffer)
	out.Reset()
	errw.Reset()
	a.ops, a.target = nil, targetFlags{}
	code := a.execute(context.Background(), args)
	return result{code, out.String(), errw.String()}
}

func TestSQLCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"sql", "--dataset", "events", "--engine", "duckdb", "--day", "2026-11-20"},
			[]string{"placeholder day folder", "DELETE FROM", "DATE '2026-11-20'", "TIMESTAMPTZ", "read_parquet"}},
		{[]string{"sql", "--dataset", "profiles", "--engine", "snowflake", "--current-state"},
			[]string{"ROW_NUMBER() OVER", "profile_id", "last_seen_at DESC"}},
		{[]string{"sql", "--dataset", "daily_stats", "--engine", "athena"},
			[]string{"CREATE EXTERNAL TABLE IF NOT EXISTS", "PARTITIONED BY"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			if err := run(context.Background(), tt.args, &out); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

func TestCLIRefusesBadInput(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"sql", "--dataset", "visits", "--engine", "duckdb"}, `"visits"`},
		{[]string{"sql", "--dataset", "events", "--engine", "oracle"}, `"oracle"`},
		{[]string{"sql", "--dataset", "events", "--engine", "duckdb", "--day", "2026-02-30"}, `2026-02-30`},
		// The errors name the flags the user typed, not the message fields.
		{[]string{"retry", "--account", "acct_abcdefghijklmnop", "--dataset", "events", "--from", "2026-11-10", "--to", "2026-11-01"}, `--to 2026-11-01 is before --from 2026-11-10`},
		{[]string{"reexport", "--dataset", "events", "--day", "2026-11-01"}, "--account is required"},
		// jobs.CheckRequest's malformed values are refused before any
		// deployment is looked for, named by the flag.
		{[]string{"reexport", "--account", "acct_a", "--dataset", "events", "--day", "2026-11-01"}, `--account "acct_a" is not an account id`},
		{[]string{"retry", "--account", "acct_ABCDEFGHIJKLMNOP", "--dataset", "events", "--from", "2026-11-01", "--to", "2026-11-02"}, `--account "acct_ABCDEFGHIJKLMNOP" is not an account id`},
		{[]string{"no-such-command"}, `unknown command "no-such-command"`},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			err := run(context.Background(), tt.args, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one naming %s", err, tt.want)
			}
		})
	}
}

// TestExitCodesAndStreams checks the conventions every command follows:
// help on stdout with exit 0, usage errors on stderr with exit 2 and the
// usage line, runtime errors exit 1.
func TestExitCodesAndStreams(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     string // substring; "" means stdout must be empty
		stderr     string // substring; "" means stderr must be empty
		usageShown bool
	}{
		{"root help", []string{"--help"}, 0, "The export ledger:", "", false},
		{"root -h", []string{"-h"}, 0, "Usage:", "", false},
		{"help command", []string{"help", "status"}, 0, "daybook status [--account ID | --search TEXT]", "", false},
		{"group help", []string{"account", "-h"}, 0, "daybook account COMMAND", "", false},
		{"leaf -h", []string{"account", "put", "-h"}, 0, "--allow-duplicate-name", "", false},
		{"nested -h", []string{"dlq", "list", "-h"}, 0, "--queue", "", false},
		{"version flag", []string{"--version"}, 0, "daybook ", "", false},
		{"version command", []string{"version"}, 0, "daybook ", "", false},
		{"completion", []string{"completion", "bash"}, 0, "bash completion", "", false},
		{"no command", nil, 2, "", "daybook needs a command", true},
		{"unknown command", []string{"stauts"}, 2, "", `did you mean status?`, true},
		{"unknown subcommand", []string{"account", "remove"}, 2, "", `unknown command "remove" for daybook account; valid: delete, disable, enable, get, history, list, put, test`, true},
		{"unknown flag", []string{"status", "--acount", "x"}, 2, "", "unknown flag: --acount", true},
		{"extra argument", []string{"status", "acct_abcdefghijklmnop"}, 2, "", `unexpected argument "acct_abcdefghijklmnop"`, true},
		{"missing argument", []string{"account", "get"}, 2, "", "ID is required", true},
		{"too many arguments", []string{"account", "get", "a", "b"}, 2, "", `unexpected argument "b"`, true},
		{"missing flag", []string{"account", "put"}, 2, "", "--file is required", true},
		{"missing flags", []string{"history", "--day", "2026-11-01"}, 2, "", "--account and --dataset are required", true},
		{"bad output", []string{"account", "list", "-o", "yaml"}, 2, "", `invalid argument "yaml" for "-o, --output" flag: want table or json`, true},
		{"bad state", []string{"status", "--state", "done"}, 2, "", `--state "done": unknown state; valid: completed, running, in-queue, requested, due, failed, stopped`, true},
		{"bad dataset", []string{"history", "--account", "acct_abcdefghijklmnop", "--dataset", "bogus", "--day", "2026-11-01"}, 2, "", `--dataset "bogus": unknown dataset; valid: events, profiles, daily_stats`, true},
		{"day and range", []string{"reexport", "--account", "acct_abcdefghijklmnop", "--dataset", "events", "--day", "2026-11-01", "--from", "2026-11-01"}, 2, "", "give --day, or --from and --to, not both", true},
		{"half a range", []string{"retry", "--account", "acct_abcdefghijklmnop", "--dataset", "events", "--from", "2026-11-01"}, 2, "", "--to is required with --from", true},
		{"range too long", []string{"reexport", "--account", "acct_abcdefghijklmnop", "--dataset", "events", "--from", "2024-01-01", "--to", "2026-01-01"}, 2, "", "at most 366 per re-export", true},
		{"bad reason", []string{"retry", "--account", "acct_abcdefghijklmnop", "--dataset", "events", "--day", "2026-11-01", "--reason", "retry"}, 2, "", `--reason "retry": want backfill or manual`, true},
		{"delete without --yes", []string{"account", "delete", "acct_abcdefghijklmnop"}, 2, "", "pass --yes", true},
		{"bad --id", []string{"account", "put", "--file", "x.json", "--id", "42"}, 2, "", `--id "42"`, true},
		{"malformed --account", []string{"retry", "--account", "acct_a", "--dataset", "events", "--day", "2026-11-01"}, 2, "", `--account "acct_a" is not an account id`, true},
		{"console on a public address", []string{"console", "--listen", "0.0.0.0:8080"}, 2, "", "--listen 0.0.0.0:8080: the console listens on a loopback address only", true},
		{"console on no address", []string{"console", "--listen", "8080"}, 2, "", `--listen "8080": want HOST:PORT`, true},
		{"console without a deployment", []string{"console"}, 1, "", "no deployment to talk to", false},
		{"no deployment", []string{"account", "list"}, 1, "", "no deployment to talk to: pass --stack NAME", false},
		{"stack and env file", []string{"account", "list", "--stack", "s", "--env-file", "e.json"}, 1, "", "give --stack or --env-file, not both", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _, _ := testApp(t)
			r := execute(t, a, tt.args...)
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
			if tt.usageShown && (!strings.Contains(r.stderr, "usage: daybook") || !strings.Contains(r.stderr, "--help' for more")) {
				t.Errorf("usage error without the usage line:\n%s", r.stderr)
			}
		})
	}
}

func TestEveryCommandHasHelpAndRefusesExtraArguments(t *testing.T) {
	t.Parallel()
	a, _, _ := testApp(t)
	root := a.rootCommand()
	for _, c := range root.Commands() {
		for _, leaf := range append(c.Commands(), c) {
			if leaf.Name() == "help" || leaf.Name() == "completion" || strings.HasPrefix(leaf.Name(), "__") {
				continue
			}
			path := strings.Fields(strings.TrimPrefix(leaf.CommandPath(), "daybook "))
			t.Run(strings.Join(path, " "), func(t *testing.T) {
				if leaf.Short == "" || strings.Contains(leaf.Short+leaf.Long, "SPEC") {
					t.Errorf("%s: short help %q (no requirement ids in help)", leaf.CommandPath(), leaf.Short)
				}
				h := execute(t, a, append(path, "-h")...)
				if h.code != 0 || !strings.Contains(h.stdout, "Usage:") || h.stderr != "" {
					t.Errorf("-h: exit %d, stdout %q, stderr %q", h.code, h.stdout, h.stderr)
				}
				if leaf.HasSubCommands() || leaf.Args == nil {
					return
				}
				// Five arguments is more than any command takes.
				r := execute(t, a, append(path, "x1", "x2", "x3", "x4", "x5")...)
				if r.code != cli.ExitUsage {
					t.Errorf("extra arguments: exit %d, want 2\n%s", r.code, r.stderr)
				}
			})
		}
	}
}

func TestRequestedBy(t *testing.T) {
	t.Parallel()
	a, _, stderr := testApp(t)
	ctx := context.Background()
	tests := []struct {
		name     string
		api      callerAPI
		override string
		want     string
		warned   bool
	}{
		{"override", failingSTS{}, "ops@example.com", "ops@example.com", false},
		{"caller identity", fixedSTS("arn:aws:sts::123456789012:assumed-role/ops/alice"), "", "arn:aws:sts::123456789012:assumed-role/ops/alice", false},
		{"no identity", failingSTS{}, "", "cli:tester", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stderr.Reset()
			if got := a.requestedBy(ctx, tt.api, tt.override); got != tt.want {
				t.Errorf("requested_by %q, want %q", got, tt.want)
			}
			if warned := strings.Contains(stderr.String(), "--requested-by"); warned != tt.warned {
				t.Errorf("warning %v, want %v: %q", warned, tt.warned, stderr.String())
			}
		})
	}
	a.osUser = func() string { return "" }
	if got := a.requestedBy(ctx, failingSTS{}, ""); got != "cli:unknown-user" {
		t.Errorf("no user at all: %q", got)
	}
}

// readmeCommands are the command lines of README.md and docs/*.md that run
// prog (after one of prefixes), comments and optional brackets dropped.
// shellSubst is a quoted command substitution in a README command line.
var shellSubst = regexp.MustCompile(`"\$\([^)]*\)"`)

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
				rest = shellSubst.ReplaceAllString(rest, "VALUE") // "$(cat .local/events/day)" is one argument
				out = append(out, strings.Fields(strings.NewReplacer("[", "", "]", "").Replace(rest)))
			}
		}
	}
	return out
}

// TestREADMECommandsExist: every daybook command line the README and the
// docs show names a command of this program and flags it takes (the local
// stack's and the demo's are daybook-dev's, tested there).
func TestREADMECommandsExist(t *testing.T) {
	t.Parallel()
	lines := readmeCommands(t, ".local/bin/daybook ", "go run ./cmd/daybook ")
	if len(lines) < 10 {
		t.Fatalf("found %d daybook command lines in the README", len(lines))
	}
	for _, args := range lines {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			a, _, _ := testApp(t)
			root := a.rootCommand()
			c, rest, err := root.Find(args)
			if err != nil || c.HasSubCommands() {
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

// TestREADMEListsTheCommands: the README's copy of `daybook --help` is the
// help's list of commands.
func TestREADMEListsTheCommands(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(b), "`daybook --help` lists the commands")
	if !ok {
		t.Fatal("README has no copy of daybook --help")
	}
	_, block, _ = strings.Cut(block, "```\n")
	block, _, _ = strings.Cut(block, "```")
	a, _, _ := testApp(t)
	r := execute(t, a, "--help")
	if r.code != 0 {
		t.Fatalf("--help: exit %d", r.code)
	}
	help := r.stdout
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		if !strings.Contains(help, line) {
			t.Errorf("daybook --help lacks the README's line %q:\n%s", line, help)
		}
	}
	for _, dev := range []string{"\n  demo ", "\n  local "} {
		if strings.Contains(help, dev) {
			t.Errorf("daybook --help lists %q, a daybook-dev command", strings.TrimSpace(dev))
		}
	}
}

// TestRequeueIsRetryHidden: daybook requeue, the earlier name of daybook
// retry (it never touched the jobs queue), still parses as retry does, and
// the help lists retry alone. TestRetry runs it against a ledger.
func TestRequeueIsRetryHidden(t *testing.T) {
	t.Parallel()
	a, _, _ := testApp(t)
	h := execute(t, a, "--help")
	if h.code != 0 || !strings.Contains(h.stdout, "\n  retry ") || strings.Contains(h.stdout, "requeue") {
		t.Errorf("daybook --help lists retry, not requeue: exit %d\n%s", h.code, h.stdout)
	}
	h = execute(t, a, "requeue", "--help")
	if h.code != 0 || !strings.Contains(h.stdout, "daybook requeue --account ID") || !strings.Contains(h.stdout, "--requested-by") {
		t.Errorf("daybook requeue --help: exit %d\n%s%s", h.code, h.stdout, h.stderr)
	}
	for _, name := range []string{"retry", "requeue"} {
		r := execute(t, a, name, "--account", "acct_abcdefghijklmnop", "--dataset", "events", "--day", "2026-11-01", "--reason", "later")
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, `--reason "later": want backfill or manual`) {
			t.Errorf("daybook %s with a bad --reason: exit %d\n%s", name, r.code, r.stderr)
		}
	}
}
