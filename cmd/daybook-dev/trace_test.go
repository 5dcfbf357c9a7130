package main

import (
	"os"
	"path/filepath"
	"runtime/trace"
	"strings"
	"testing"
)

// TestTraceCommand runs daybook-dev trace on a trace this test writes, as
// docs/performance.md shows it on the benchmark's traces.
func TestTraceCommand(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "export.trace")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := trace.Start(f); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { close(done) }()
	<-done
	trace.Stop()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	r := execute(t, "trace", path, "--groups", "3")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "span ") || !strings.Contains(r.stdout, "1 running: ") || !strings.Contains(r.stdout, " goroutines): ran ") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, bad := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"trace", path, "--groups", "0"}, 2, "--groups 0, --waits 3: want at least 1 group"},
		{[]string{"trace", filepath.Join(t.TempDir(), "none.trace")}, 1, "none.trace: no such file"},
		{[]string{"trace", "cli_test.go"}, 1, "cli_test.go: trace: "},
	} {
		if r := execute(t, bad.args...); r.code != bad.code || !strings.Contains(r.stderr, bad.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", bad.args, r.code, r.stderr, bad.code, bad.want)
		}
	}
}
