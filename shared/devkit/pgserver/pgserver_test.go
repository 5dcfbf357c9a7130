package pgserver

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestStartStop(t *testing.T) {
	ctx := context.Background()
	s, err := Start(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("initdb %s, start %s, pid %d, dsn %q", s.InitDuration, s.StartDuration, s.Pid, s.DSN)
	conn, err := pgconn.Connect(ctx, s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	res, err := conn.Exec(ctx, "SELECT current_setting('server_version_num'), current_user").ReadAll()
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if row := res[0].Rows[0]; string(row[1]) != Role || len(row[0]) != 6 {
		t.Fatalf("server_version_num, current_user = %q, %q", row[0], row[1])
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil { // idempotent
		t.Fatal(err)
	}
	if err := syscall.Kill(s.Pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("pid %d still there after Stop: %v", s.Pid, err)
	}
	if _, err := os.Stat(s.Root); !os.IsNotExist(err) {
		t.Errorf("cluster dir %s left behind: %v", s.Root, err)
	}
	if _, err := os.Stat(s.Log); err != nil {
		t.Errorf("log: %v", err)
	}
}

func TestMissingBinaries(t *testing.T) {
	t.Setenv("PGTEST_BIN", t.TempDir())
	_, err := Start(context.Background(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "apt-get install postgresql") {
		t.Fatalf("got %v, want the install hint", err)
	}
}
