package demosource

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"sort"
	"strings"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/dataset"
)

// fill creates the schema at path, inserts every account's rows in one
// transaction and counts the partitions.
func fill(ctx context.Context, path string, opts Options, accts []account.Account) (map[string]map[string]map[string]int64, error) {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return nil, fmt.Errorf("demosource: open %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ddl, err := dataset.SourceDDL(dataset.DialectSQLite)
	if err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, "PRAGMA journal_mode=DELETE; PRAGMA synchronous=OFF; PRAGMA cache_size=-131072"); err != nil {
		return nil, fmt.Errorf("demosource: pragmas: %w", err)
	}
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		return nil, fmt.Errorf("demosource: create tables: %w", err)
	}

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	ins, err := prepare(ctx, tx)
	if err != nil {
		return nil, err
	}
	defer ins.close()
	for i, a := range accts {
		g, err := newGen(opts, i)
		if err != nil {
			return nil, err
		}
		if err := g.run(ctx, opts.Days); err != nil {
			return nil, err
		}
		if err := ins.write(ctx, a.ID, g); err != nil {
			return nil, fmt.Errorf("demosource: account %s: %w", a.ID, err)
		}
	}
	ins.close()
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("demosource: commit: %w", err)
	}
	rows, err := countRows(ctx, db, accts, opts.Now)
	if err != nil {
		return nil, err
	}
	return rows, db.Close()
}

// eventBatch is how many events one INSERT statement carries: fewer
// statement executions make the bulk load about twice as fast.
const eventBatch = 64

const eventCols = 12

type inserter struct {
	events, eventsOne, profiles, stats *sql.Stmt
	args                               []any
}

func prepare(ctx context.Context, tx *sql.Tx) (*inserter, error) {
	ins := inserter{args: make([]any, 0, eventBatch*eventCols)}
	values := func(n int) string {
		one := "(?" + strings.Repeat(",?", eventCols-1) + ")"
		return strings.TrimSuffix(strings.Repeat(one+",", n), ",")
	}
	const eventsInsert = `INSERT INTO events (account_id, event_id, event_type, occurred_at, received_at,
		inserted_at, session_id, user_id, value, amount, is_test, attributes) VALUES `
	var err error
	if ins.events, err = tx.PrepareContext(ctx, eventsInsert+values(eventBatch)); err != nil {
		return nil, err
	}
	if ins.eventsOne, err = tx.PrepareContext(ctx, eventsInsert+values(1)); err != nil {
		ins.close()
		return nil, err
	}
	if ins.profiles, err = tx.PrepareContext(ctx, `INSERT INTO profile_activity (account_id, profile_id, activity_date,
		first_seen_at, last_seen_at, email, country, plan, event_count, attributes) VALUES (?,?,?,?,?,?,?,?,?,?)`); err != nil {
		ins.close()
		return nil, err
	}
	if ins.stats, err = tx.PrepareContext(ctx, `INSERT INTO daily_stats (account_id, stat_date, metric, dimension,
		count, sum, attributes) VALUES (?,?,?,?,?,?,?)`); err != nil {
		ins.close()
		return nil, err
	}
	return &ins, nil
}

func (ins *inserter) close() {
	for _, s := range []**sql.Stmt{&ins.events, &ins.eventsOne, &ins.profiles, &ins.stats} {
		if *s != nil {
			(*s).Close()
			*s = nil
		}
	}
}

func (ins *inserter) write(ctx context.Context, acct string, g *gen) error {
	// In occurred_at order (the ids sort by time): both indexes then grow
	// at their end, which keeps the bulk load fast.
	sort.Slice(g.events, func(i, j int) bool { return g.events[i].id < g.events[j].id })
	for _, e := range g.events {
		var amount any
		if e.typ == "purchase" {
			amount = dataset.NewDecimal(e.cents, 2).String()
		}
		test := 0
		if e.test {
			test = 1
		}
		ins.args = append(ins.args, acct, e.id, e.typ, dataset.FormatTimestamp(e.occurred),
			dataset.FormatTimestamp(e.received), dataset.FormatTimestamp(e.inserted), e.session, e.user,
			e.value, amount, test, e.attrs)
		if len(ins.args) == eventBatch*eventCols {
			if err := ctx.Err(); err != nil {
				return err
			}
			if _, err := ins.events.ExecContext(ctx, ins.args...); err != nil {
				return fmt.Errorf("insert events up to %s: %w", e.id, err)
			}
			ins.args = ins.args[:0]
		}
	}
	// The remainder, one row at a time.
	for off := 0; off < len(ins.args); off += eventCols {
		if _, err := ins.eventsOne.ExecContext(ctx, ins.args[off:off+eventCols]...); err != nil {
			return fmt.Errorf("insert event %s: %w", ins.args[off+1], err)
		}
	}
	ins.args = ins.args[:0]
	for _, p := range g.profileActivity() {
		if _, err := ins.profiles.ExecContext(ctx, acct, p.user.id, p.day, dataset.FormatTimestamp(p.first),
			dataset.FormatTimestamp(p.last), p.user.email, p.user.country, p.plan, p.events, p.user.attrs); err != nil {
			return fmt.Errorf("insert profile_activity %s %s: %w", p.user.id, p.day, err)
		}
	}
	keys := make([]statKey, 0, len(g.stats))
	for k := range g.stats {
		keys = append(keys, k)
	}
	// Every day with data has its totals, zero included.
	for day := range g.days {
		for _, m := range []string{"events", "sessions", "revenue", "signups"} {
			k := statKey{day: day, metric: m}
			if g.stats[k] == nil {
				g.stats[k] = &stat{}
				keys = append(keys, k)
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.day != b.day {
			return a.day < b.day
		}
		if a.metric != b.metric {
			return a.metric < b.metric
		}
		return a.dimkey < b.dimkey
	})
	currency := `{"currency":"` + g.t.currency + `"}`
	for _, k := range keys {
		s := g.stats[k]
		var attrs any
		if k.metric == "revenue" {
			attrs = currency
		}
		sum := s.sum
		if k.metric == "revenue" {
			sum = math.Round(sum*100) / 100
		} else if k.metric == "sessions" {
			sum = math.Round(sum*1e6) / 1e6
		}
		if _, err := ins.stats.ExecContext(ctx, acct, k.day, k.metric, k.dimkey, s.count, sum, attrs); err != nil {
			return fmt.Errorf("insert daily_stats %s %s %q: %w", k.day, k.metric, k.dimkey, err)
		}
	}
	return nil
}
