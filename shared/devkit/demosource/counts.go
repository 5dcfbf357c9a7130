package demosource

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/source"
)

// countRows runs each dataset's own sqlite query, wrapped in a count, over
// each account's day windows from its start date through today, binding
// the parameters the SQL source binds (source.Query.Params).
func countRows(ctx context.Context, db *sql.DB, accts []account.Account, now time.Time) (map[string]map[string]map[string]int64, error) {
	ex, err := dataset.Example() // the demo's catalog
	if err != nil {
		return nil, err
	}
	cat := ex.Datasets()
	out := map[string]map[string]map[string]int64{}
	for _, a := range accts {
		loc, err := a.Location()
		if err != nil {
			return nil, err
		}
		out[a.ID] = map[string]map[string]int64{}
		for _, ds := range cat {
			q, err := ds.Query(dataset.DialectSQLite)
			if err != nil {
				return nil, err
			}
			stmt, err := db.PrepareContext(ctx, "SELECT count(*) FROM ("+q+")")
			if err != nil {
				return nil, fmt.Errorf("demosource: count %s: %w", ds.Name, err)
			}
			m := map[string]int64{}
			for _, day := range civil.Range(a.StartDate, civil.In(now, loc)) {
				start, end := a.Window(day)
				q := source.Query{AccountID: a.ID, Dataset: ds, Day: day, Start: start, End: end}
				var n int64
				if err := stmt.QueryRowContext(ctx, q.Params(dataset.DialectSQLite)...).Scan(&n); err != nil {
					stmt.Close()
					return nil, fmt.Errorf("demosource: count %s %s: %w", ds.Name, day, err)
				}
				m[day.String()] = n
			}
			stmt.Close()
			out[a.ID][ds.Name] = m
		}
	}
	return out, nil
}
