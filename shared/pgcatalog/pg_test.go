package pgcatalog_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/daybook-dev/daybook/shared/devkit/pgserver"
	"github.com/daybook-dev/daybook/shared/devkit/platformsource"
)

// One PostgreSQL server for the package, started by the first test that
// needs it and stopped by TestMain.
var (
	pgOnce   sync.Once
	pgServer *pgserver.Server
	pgErr    error
	pgLogDir string
	pgSeq    atomic.Int64
)

func TestMain(m *testing.M) {
	code := m.Run()
	if pgServer != nil {
		if err := pgServer.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if pgLogDir != "" {
		os.RemoveAll(pgLogDir)
	}
	os.Exit(code)
}

var nonIdent = regexp.MustCompile(`[^a-z0-9]+`)

// pgDB returns a pool whose search_path is a fresh schema holding the
// platform schema (platformsource.DDL) unless bare.
func pgDB(t *testing.T, bare bool) *sql.DB {
	t.Helper()
	pgOnce.Do(func() {
		if pgLogDir, pgErr = os.MkdirTemp("", "daybook-pg-log-"); pgErr != nil {
			return
		}
		pgServer, pgErr = pgserver.Start(context.Background(), pgLogDir)
	})
	if pgErr != nil {
		t.Fatal(pgErr) // never skip: the install hint is in the error
	}
	name := nonIdent.ReplaceAllString(strings.ToLower(t.Name()), "_")
	name = fmt.Sprintf("t%d_%s", pgSeq.Add(1), name[:min(len(name), 40)])
	admin, err := sql.Open("pgx", pgServer.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE SCHEMA " + pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", pgServer.DSN+" search_path="+name+" timezone=Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if !bare {
		pgExec(t, db, platformsource.DDL)
	}
	return db
}

func pgExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func pgConn(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
