package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/icetable"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// The demo keeps an Iceberg table for its first account (UTC days, Parquet
// files): destination.table_format: iceberg, so each dataset's folder also
// holds metadata/ beside its dt= folders.

// demoTableAccount is the demo account that keeps a table.
const demoTableAccount = 0

// withTable turns the table on for a and checks the account still holds.
func withTable(catalog *dataset.Set, a *account.Account) error {
	a.Destination.TableFormat = account.TableFormatIceberg
	if err := a.ValidateShape(catalog); err != nil {
		return fmt.Errorf("demo account %s with an Iceberg table: %w", a.ID, err)
	}
	return nil
}

// demoTable is one dataset's table as the demo read it back.
type demoTable struct {
	Dataset  string
	Bucket   string
	Location string // the table's key, <prefix>/v1/<dataset>
	Version  int    // the current metadata version
	Days     int
	Rows     int64
}

// MetadataKey is the current metadata file's key.
func (t demoTable) MetadataKey() string { return icetable.MetadataKey(t.Location, t.Version) }

// checkTables reads each dataset's table of a with iceberg-go and compares
// its rows per day with the ledger's completed rows (each the row count of
// the day's _manifest.json); it returns the tables and the problems found.
func checkTables(ctx context.Context, catalog *dataset.Set, api *s3.Client, a account.Account, stage string, rows []ledger.Row) ([]demoTable, []string, error) {
	prefix, err := a.Prefix(stage)
	if err != nil {
		return nil, nil, err
	}
	store := bucket.New(api, a.Destination.Bucket, bucket.Options{})
	var tables []demoTable
	var problems []string
	for _, name := range a.Datasets {
		ds, err := catalog.Get(name)
		if err != nil {
			return nil, nil, err
		}
		t := demoTable{Dataset: name, Bucket: a.Destination.Bucket, Location: strings.TrimSuffix(layout.DatasetPrefix(prefix, ds.LedgerName()), "/")}
		where := fmt.Sprintf("table s3://%s/%s", t.Bucket, t.Location)
		tbl, err := icetable.Load(ctx, store, t.Location)
		if errors.Is(err, icetable.ErrNoTable) {
			problems = append(problems, where+": no table")
			continue
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		t.Version = icetable.VersionOf(tbl.MetadataLocation())
		got, err := icetable.RowsPerDay(ctx, tbl, ds)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		for _, r := range rows {
			if r.AccountID != a.ID || r.Dataset != name || r.State != ledger.StateCompleted {
				continue
			}
			if got[r.Day] != r.Rows {
				problems = append(problems, fmt.Sprintf("%s: dt=%s reads %d rows, its manifest %d", where, r.Day, got[r.Day], r.Rows))
			}
			if r.Rows > 0 {
				t.Days++
			}
			t.Rows += got[r.Day]
		}
		tables = append(tables, t)
	}
	return tables, problems, nil
}

// printTableQuery prints the DuckDB query over the events table, beside the
// folder query: DuckDB reads it through its iceberg extension, which
// INSTALL fetches from DuckDB's extension repository the first time.
func printTableQuery(out io.Writer, mirror string, tables []demoTable) {
	i := slices.IndexFunc(tables, func(t demoTable) bool { return t.Dataset == "events" })
	if i < 0 {
		return
	}
	t := tables[i]
	meta := filepath.Join(mirror, t.Bucket, filepath.FromSlash(t.MetadataKey()))
	fmt.Fprintf(out, "or query the Iceberg table of %s (metadata v%d; the iceberg extension is downloaded on first INSTALL):\n", t.Dataset, t.Version)
	fmt.Fprintf(out, "  duckdb -c \"INSTALL iceberg; LOAD iceberg; SELECT CAST(timezone('UTC', occurred_at) AS DATE) AS dt, event_type, count(*) AS events, sum(amount) AS revenue FROM iceberg_scan('%s', allow_moved_paths = true) GROUP BY ALL ORDER BY ALL\"\n", meta)
}
