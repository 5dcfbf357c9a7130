// Package servertest runs a serverproc server around a package's tests
// (Around, in TestMain) or one test (ForTest). Only tests import it.
package servertest

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/serverproc"
)

// Around runs run with a server started by start in a temporary directory
// (removed afterwards), for a package's TestMain: the server is stored in
// *p, stopped after run, and its log's end printed when run fails. A
// server that cannot start fails the run (exit 1) with its error: a test
// never skips for lack of a tool.
func Around(run func() int, p **serverproc.Process, start func(ctx context.Context, dir string) (*serverproc.Process, error)) int {
	dir, err := os.MkdirTemp("", "daybook-server-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	s, err := start(context.Background(), dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	*p = s
	code := run()
	if code != 0 {
		if tail := s.LogTail(); tail != "" {
			fmt.Fprintf(os.Stderr, "--- %s log tail ---\n%s\n", s.Name, tail)
		}
	}
	if err := s.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return code
}

// ForTest starts a server for one test in t.TempDir() and stops it when
// the test ends, logging its log's end when the test failed.
func ForTest(t testing.TB, start func(ctx context.Context, dir string) (*serverproc.Process, error)) *serverproc.Process {
	t.Helper()
	s, err := start(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- %s log tail ---\n%s", s.Name, s.LogTail())
		}
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}
