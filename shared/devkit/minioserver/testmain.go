package minioserver

import (
	"context"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/serverproc"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc/servertest"
)

// RunTests starts one MinIO server for a package's tests, in a temporary
// directory removed afterwards, stores it in *srv, runs m and stops the
// server. A missing minio binary fails the run with the install hint; it
// never skips. A failed run prints the end of the server's log.
func RunTests(m *testing.M, srv **Server) int { return Around(m.Run, srv) }

// Around is RunTests around run, for a package that starts other servers
// too: TestMain calls Around(func() int { return motoserver.RunTests(m, &moto) }, &srv).
func Around(run func() int, srv **Server) int {
	var p *serverproc.Process
	return servertest.Around(func() int { *srv = &Server{p}; return run() }, &p, start)
}

// ForTest starts a MinIO server for one test, in t.TempDir(), and stops it
// when the test ends. A missing minio binary fails the test with the
// install hint; it never skips. A failed test logs the end of the server's
// log.
func ForTest(t testing.TB) *Server {
	t.Helper()
	return &Server{servertest.ForTest(t, start)}
}

func start(ctx context.Context, dir string) (*serverproc.Process, error) {
	s, err := Start(ctx, dir)
	if err != nil {
		return nil, err
	}
	return s.Process, nil
}
