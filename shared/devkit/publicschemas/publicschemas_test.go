package publicschemas

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/pgserver"
	"github.com/daybook-dev/daybook/shared/pgcatalog"
)

// TestSchemasLoadAndDescribe: every schema's DDL loads into one database
// with its rows, each init line describes its tables into an entry the
// catalog loader accepts and catalog check finds no error in, and each
// refusal is refused for its reason.
func TestSchemasLoadAndDescribe(t *testing.T) {
	pg := pgserver.New(t)
	db, err := sql.Open("pgx", pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	day := civil.Of(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	for _, s := range All() {
		data, err := s.Load(ctx, db, civil.Range(day.AddDays(-1), day.AddDays(4)))
		if err != nil {
			t.Fatal(err)
		}
		rows := 0
		for _, r := range data.Tables {
			rows += len(r)
		}
		if rows < 100 {
			t.Errorf("%s: %d rows", s.Name, rows)
		}
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range s.Inits {
			o, tables := options(t, line)
			for _, table := range tables {
				tab, err := pgcatalog.ReadTable(ctx, db, table)
				if err != nil {
					t.Fatal(err)
				}
				e, err := pgcatalog.Entry(tab, o)
				if err != nil {
					t.Fatalf("%s: %s: %v", s.Name, table, err)
				}
				d, err := dataset.ResolveEntry(e)
				if err != nil {
					t.Fatalf("%s: %s: %v", s.Name, table, err)
				}
				fs, err := pgcatalog.CheckDataset(ctx, conn, d)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range fs {
					if f.Severity == pgcatalog.SeverityError {
						t.Errorf("%s: %+v", s.Name, f)
					} else {
						t.Logf("%s: %s", s.Name, f.Message)
					}
				}
				if n := len(data.Tables[table[strings.LastIndexByte(table, '.')+1:]]); n == 0 {
					t.Errorf("%s: no rows for %s", s.Name, table)
				}
			}
		}
		for _, ref := range s.Refused {
			o, tables := options(t, ref.Init)
			tab, err := pgcatalog.ReadTable(ctx, db, tables[0])
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pgcatalog.Entry(tab, o); err == nil || !strings.Contains(err.Error(), ref.Why) {
				t.Errorf("%s: %s: %v, want a refusal naming %s", s.Name, tables[0], err, ref.Why)
			}
		}
		conn.Close()
	}
}

// options reads an init line's flags as catalog init does.
func options(t *testing.T, line []string) (pgcatalog.EntryOptions, []string) {
	t.Helper()
	o := pgcatalog.EntryOptions{Partition: dataset.PartitionEventTime}
	var tables []string
	for i := 0; i+1 < len(line); i += 2 {
		v := line[i+1]
		switch line[i] {
		case "--tenant-column":
			o.TenantColumn = v
		case "--partition-column":
			o.PartitionColumn = v
		case "--partition":
			o.Partition = v
		case "--source-time-zone":
			o.SourceTimeZone = v
		case "--table":
			tables = append(tables, v)
		default:
			t.Fatalf("init flag %s", line[i])
		}
	}
	return o, tables
}
