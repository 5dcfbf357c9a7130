package minioserver

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// RunTests starts one MinIO server for a package's tests, in a temporary
// directory removed afterwards, stores it in *srv, runs m and stops the
// server. A missing minio binary fails the run with the install hint; it
// never skips. A failed run prints the end of the server's log.
func RunTests(m *testing.M, srv **Server) int { return Around(m.Run, srv) }

// Around is RunTests around run, for a package that starts other servers
// too: TestMain calls Around(func() int { return motoserver.RunTests(m, &moto) }, &srv).
func Around(run func() int, srv **Server) int {
	dir, err := os.MkdirTemp("", "daybook-minio-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	s, err := Start(context.Background(), dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	*srv = s
	code := run()
	if code != 0 {
		if tail := LogTail(s.Log); tail != "" {
			fmt.Fprintf(os.Stderr, "--- minio log tail ---\n%s\n", tail)
		}
	}
	if err := s.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return code
}

// ForTest starts a MinIO server for one test, in t.TempDir(), and stops it
// when the test ends. A missing minio binary fails the test with the
// install hint; it never skips. A failed test logs the end of the server's
// log.
func ForTest(t testing.TB) *Server {
	t.Helper()
	dir := t.TempDir()
	s, err := Start(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- minio log tail ---\n%s", LogTail(s.Log))
		}
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}
