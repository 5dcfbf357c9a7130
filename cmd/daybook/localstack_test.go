package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/hostbuild"
)

// localAccountID is the account `daybook-dev local up` registers (its
// LocalAccountID).
const localAccountID = "acct_localdemoaccount"

// localRun is a local stack a test started as a user would: the host builds
// `make build` makes (the bootstraps, this CLI and daybook-dev) in
// <dir>/bin, then `daybook-dev local up --dir <dir>`; stopped when the test
// ends.
type localRun struct {
	t        *testing.T
	ctx      context.Context
	dir, env string
}

// startLocal builds the binaries and runs `local up` with stage; it returns
// the stack and what local up printed.
func startLocal(t *testing.T, ctx context.Context, stage string) (*localRun, string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	hostbuild.Bootstraps(t, bin, "SweeperFunction", "ExporterFunction")
	hostbuild.Command(t, bin, "daybook")
	hostbuild.Command(t, bin, "daybook-dev")
	l := &localRun{t: t, ctx: ctx, dir: dir, env: filepath.Join(dir, "env.json")}
	t.Cleanup(func() { _ = exec.Command(filepath.Join(bin, "daybook-dev"), "local", "down", "--dir", dir).Run() })
	out := l.dev("local", "up", "--dir", dir, "--template", "../../template.yaml", "--stage", stage)
	return l, out
}

// dev runs a daybook-dev command line and returns its stdout; a failure
// fails the test.
func (l *localRun) dev(args ...string) string {
	l.t.Helper()
	var out, errw bytes.Buffer
	cmd := exec.CommandContext(l.ctx, filepath.Join(l.dir, "bin", "daybook-dev"), args...)
	cmd.Stdout, cmd.Stderr = &out, &errw
	if err := cmd.Run(); err != nil {
		l.t.Fatalf("daybook-dev %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errw.String())
	}
	return out.String()
}

// cliOutput is a command line's stdout and stderr, whatever its exit: for
// a failure's message.
func (l *localRun) cliOutput(args ...string) string {
	var out bytes.Buffer
	code := newApp(&out, &out).execute(l.ctx, args)
	return fmt.Sprintf("%s(exit %d)", out.String(), code)
}

// cli runs a command line as the daybook binary would, in-process, and
// returns its stdout; a non-zero exit fails the test.
func (l *localRun) cli(args ...string) string {
	l.t.Helper()
	var out, errw bytes.Buffer
	a := newApp(&out, &errw)
	if code := a.execute(l.ctx, args); code != 0 {
		l.t.Fatalf("daybook %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errw.String())
	}
	return out.String()
}
