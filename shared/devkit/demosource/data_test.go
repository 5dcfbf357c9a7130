package demosource

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/sourcetest"
	"github.com/daybook-dev/daybook/shared/source"
)

func TestShapes(t *testing.T) {
	d := generate(t, Options{Seed: 3})
	db := open(t, d.Path)
	q := func(dest any, query string, args ...any) {
		t.Helper()
		if err := db.QueryRow(query, args...).Scan(dest); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	keys := map[int]string{}
	for i, a := range d.Accounts {
		var late, total, tests, purchasesWithoutAmount, amountsElsewhere, types int64
		q(&total, "SELECT count(*) FROM events WHERE account_id = ?", a.ID)
		// Late: inserted on a later day (account zone) than it occurred.
		loc, _ := a.Location()
		rows, err := db.Query("SELECT occurred_at, inserted_at FROM events WHERE account_id = ?", a.ID)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var o, in string
			if err := rows.Scan(&o, &in); err != nil {
				t.Fatal(err)
			}
			ot, _ := dataset.ParseTimestamp(o)
			it, _ := dataset.ParseTimestamp(in)
			if !it.After(ot) || it.Sub(ot) > 49*time.Hour {
				t.Fatalf("account %d: occurred %s inserted %s", i+1, o, in)
			}
			if it.After(now) || ot.After(now) {
				t.Fatalf("account %d: row after the demo clock: %s %s", i+1, o, in)
			}
			if civil.In(ot, loc).Before(civil.In(it, loc)) {
				late++
			}
		}
		rows.Close()
		if late == 0 || late > total/10 {
			t.Errorf("account %d: %d late events of %d", i+1, late, total)
		}
		q(&tests, "SELECT count(*) FROM events WHERE account_id = ? AND is_test = 1", a.ID)
		if tests > total/20 {
			t.Errorf("account %d: %d test events of %d", i+1, tests, total)
		}
		q(&purchasesWithoutAmount, "SELECT count(*) FROM events WHERE account_id = ? AND event_type = 'purchase' AND amount IS NULL", a.ID)
		q(&amountsElsewhere, "SELECT count(*) FROM events WHERE account_id = ? AND event_type <> 'purchase' AND amount IS NOT NULL", a.ID)
		if purchasesWithoutAmount+amountsElsewhere != 0 {
			t.Errorf("account %d: amount misplaced (%d, %d)", i+1, purchasesWithoutAmount, amountsElsewhere)
		}
		q(&types, "SELECT count(DISTINCT event_type) FROM events WHERE account_id = ?", a.ID)
		if types < 5 || types > 10 {
			t.Errorf("account %d: %d event types", i+1, types)
		}
		var multi int64
		q(&multi, "SELECT count(*) FROM (SELECT session_id FROM events WHERE account_id = ? GROUP BY session_id HAVING count(*) > 2)", a.ID)
		if multi == 0 {
			t.Errorf("account %d: no session with several events", i+1)
		}
		// Afternoon is busier than the night, in the account's zone.
		var afternoon, night int64
		rows, err = db.Query("SELECT occurred_at FROM events WHERE account_id = ?", a.ID)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var o string
			rows.Scan(&o)
			ot, _ := dataset.ParseTimestamp(o)
			switch h := ot.In(loc).Hour(); {
			case h >= 13 && h < 18:
				afternoon++
			case h >= 1 && h < 6:
				night++
			}
		}
		rows.Close()
		if afternoon < 3*night {
			t.Errorf("account %d: afternoon %d vs night %d", i+1, afternoon, night)
		}
		// Attribute keys differ by account.
		var attrs string
		q(&attrs, "SELECT attributes FROM events WHERE account_id = ? AND attributes IS NOT NULL ORDER BY event_id LIMIT 1", a.ID)
		var m map[string]any
		if err := json.Unmarshal([]byte(attrs), &m); err != nil {
			t.Fatal(err)
		}
		keys[i] = strings.Join(slices.Sorted(maps.Keys(m)), ",")
	}
	if keys[0] == keys[1] || keys[1] == keys[2] || keys[0] == keys[2] {
		t.Errorf("attributes alike across accounts: %v", keys)
	}
	if !strings.Contains(keys[0], "utm_source") || !strings.Contains(keys[1], "store_id") || !strings.Contains(keys[2], "plan_tier") {
		t.Errorf("attribute keys %v", keys)
	}
}

// TestConsistency checks profiles and daily_stats against the events.
func TestConsistency(t *testing.T) {
	d := generate(t, Options{Seed: 5})
	db := open(t, d.Path)
	for i, a := range d.Accounts {
		checkProfiles(t, db, d, a)

		// daily_stats totals equal the non-test events of each day window.
		loc, _ := a.Location()
		for _, day := range civil.Range(civil.In(now, loc).AddDays(-14), civil.In(now, loc)) {
			start, end := a.Window(day)
			var events, purchases int64
			var revenue float64
			db.QueryRow(`SELECT count(*), coalesce(sum(event_type = 'purchase'), 0), coalesce(sum(CASE WHEN event_type = 'purchase' THEN CAST(amount AS REAL) END), 0)
				FROM events WHERE account_id = ? AND occurred_at >= ? AND occurred_at < ? AND is_test = 0`,
				a.ID, dataset.FormatTimestamp(start), dataset.FormatTimestamp(end)).Scan(&events, &purchases, &revenue)
			var statEvents, statPurchases int64
			var statRevenue float64
			db.QueryRow(`SELECT count FROM daily_stats WHERE account_id = ? AND stat_date = ? AND metric = 'events' AND dimension = ''`,
				a.ID, day.String()).Scan(&statEvents)
			db.QueryRow(`SELECT count, sum FROM daily_stats WHERE account_id = ? AND stat_date = ? AND metric = 'revenue' AND dimension = ''`,
				a.ID, day.String()).Scan(&statPurchases, &statRevenue)
			if events != statEvents || purchases != statPurchases || fmt.Sprintf("%.2f", revenue) != fmt.Sprintf("%.2f", statRevenue) {
				t.Errorf("account %d %s: events %d/%d purchases %d/%d revenue %.2f/%.2f (source/stats)",
					i+1, day, events, statEvents, purchases, statPurchases, revenue, statRevenue)
			}
			var byType int64
			db.QueryRow(`SELECT coalesce(sum(count), 0) FROM daily_stats WHERE account_id = ? AND stat_date = ? AND metric = 'events' AND dimension <> ''`,
				a.ID, day.String()).Scan(&byType)
			if byType != statEvents {
				t.Errorf("account %d %s: per-type events %d, total %d", i+1, day, byType, statEvents)
			}
		}
	}
}

// checkProfiles checks profile_activity against the events of account a:
// one row per identified user and local day with events, holding the state
// after that day's last event.
func checkProfiles(t *testing.T, db *sql.DB, d *Demo, a account.Account) {
	t.Helper()
	loc, _ := a.Location()
	// Each user's events, in time order (ids sort by time).
	type ev struct {
		at       string
		purchase bool
	}
	events := map[string][]ev{}
	rows, err := db.Query(`SELECT user_id, occurred_at, event_type = 'purchase' FROM events
		WHERE account_id = ? AND user_id IS NOT NULL ORDER BY occurred_at, event_id`, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var u, at string
		var p bool
		if err := rows.Scan(&u, &at, &p); err != nil {
			t.Fatal(err)
		}
		events[u] = append(events[u], ev{at, p})
	}
	rows.Close()

	type row struct {
		day, first, last string
		plan             sql.NullString
		count            int64
	}
	got := map[string][]row{}
	rows, err = db.Query(`SELECT profile_id, activity_date, first_seen_at, last_seen_at, plan, event_count
		FROM profile_activity WHERE account_id = ? ORDER BY profile_id, activity_date`, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for rows.Next() {
		var p string
		var r row
		if err := rows.Scan(&p, &r.day, &r.first, &r.last, &r.plan, &r.count); err != nil {
			t.Fatal(err)
		}
		got[p] = append(got[p], r)
		total++
	}
	rows.Close()
	if len(got) != len(events) || len(got) == 0 {
		t.Errorf("%s: %d users with events, %d profiles", a.Name, len(events), len(got))
	}

	upgraded := 0
	for u, evs := range events {
		// The expected rows: the state after the last event of each day.
		var want []row
		for n, e := range evs {
			at, _ := dataset.ParseTimestamp(e.at)
			day := civil.In(at, loc).String()
			if len(want) == 0 || want[len(want)-1].day != day {
				want = append(want, row{day: day, first: evs[0].at})
			}
			w := &want[len(want)-1]
			w.last, w.count = e.at, int64(n+1)
		}
		have := got[u]
		if len(have) != len(want) {
			t.Errorf("%s: user %s active on %d days, %d profile rows", a.Name, u, len(want), len(have))
			continue
		}
		for i := range want {
			h, w := have[i], want[i]
			if h.day != w.day || h.first != w.first || h.last != w.last || h.count != w.count {
				t.Errorf("%s: user %s row %d = %+v, want %+v", a.Name, u, i, h, w)
			}
			// A plan only ever moves up, and only across a purchase.
			if i > 0 && h.plan != have[i-1].plan {
				purchased := false
				for _, e := range evs {
					purchased = purchased || e.purchase && e.at > have[i-1].last && e.at <= h.last
				}
				if have[i-1].plan.String != "free" || h.plan.String != "plus" || !purchased {
					t.Errorf("%s: user %s plan %v then %v", a.Name, u, have[i-1].plan, h.plan)
				}
				upgraded++
			}
		}
	}
	if a.ID == d.Accounts[0].ID && upgraded == 0 {
		t.Errorf("%s: no plan upgrade in the feed", a.Name)
	}

	// The partitions hold every row exactly once, and most days several.
	var sum int64
	busy := 0
	for _, n := range d.Rows[a.ID]["profiles"] {
		sum += n
		if n > 1 {
			busy++
		}
	}
	if sum != int64(total) {
		t.Errorf("%s: partitions hold %d profile rows, the source %d", a.Name, sum, total)
	}
	if busy < 10 {
		t.Errorf("%s: profiles on %d days only", a.Name, busy)
	}
}

// TestProfilesFeed is D4 on the demo: a profile active on two days is
// in both partitions, each with its state as of that day, and the earlier
// partition does not change with the later activity.
func TestProfilesFeed(t *testing.T) {
	d := generate(t, Options{Seed: 9})
	db := open(t, d.Path)
	src, err := source.NewSQL(db, "sqlite", "demo")
	if err != nil {
		t.Fatal(err)
	}
	ds, _ := datasettest.Example(t).Get("profiles")
	read := func(a account.Account, day civil.Date) map[string][]any {
		t.Helper()
		start, end := a.Window(day)
		date, _ := civil.Parse(day.String())
		out := map[string][]any{}
		_, err := sourcetest.Rows(context.Background(), src, source.Query{AccountID: a.ID, Dataset: ds, Day: date, Start: start, End: end},
			func(r []any) error {
				if out[r[0].(string)] != nil {
					t.Fatalf("%s: profile %s twice in %s", a.Name, r[0], day)
				}
				out[r[0].(string)] = append([]any(nil), r...)
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, a := range d.Accounts {
		loc, _ := a.Location()
		closed := a.ClosedThrough(now)
		early, late := closed.AddDays(-6), closed.AddDays(-2)
		d1, d2 := read(a, early), read(a, late)
		both := 0
		for id, r1 := range d1 {
			r2, ok := d2[id]
			if !ok {
				continue
			}
			both++
			last1, last2 := r1[2].(time.Time), r2[2].(time.Time)
			if civil.In(last1, loc) != early || civil.In(last2, loc) != late {
				t.Errorf("%s %s: last seen %s and %s, partitions %s and %s", a.Name, id, last1, last2, early, late)
			}
			if !r1[1].(time.Time).Equal(r2[1].(time.Time)) {
				t.Errorf("%s %s: first seen %s then %s", a.Name, id, r1[1], r2[1])
			}
			// The day's state: the events up to its last activity.
			var n int64
			if err := db.QueryRow(`SELECT count(*) FROM events WHERE account_id = ? AND user_id = ? AND occurred_at <= ?`,
				a.ID, id, dataset.FormatTimestamp(last1)).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if r1[6].(int64) != n || r2[6].(int64) <= n {
				t.Errorf("%s %s: event_count %d then %d, %d events up to %s", a.Name, id, r1[6], r2[6], n, last1)
			}
		}
		if both == 0 {
			t.Errorf("%s: no profile active on both %s and %s", a.Name, early, late)
		}
		// Reading the earlier day again gives the same rows.
		if again := read(a, early); !reflect.DeepEqual(again, d1) {
			t.Errorf("%s: re-reading %s changed its rows", a.Name, early)
		}
	}
}

// TestRowsMatchSource reads partitions through the SQL source with the
// account's window and compares with Demo.Rows.
func TestRowsMatchSource(t *testing.T) {
	d := generate(t, Options{Seed: 11})
	db := open(t, d.Path)
	src, err := source.NewSQL(db, "sqlite", "demo")
	if err != nil {
		t.Fatal(err)
	}
	cat := datasettest.Example(t).Datasets()
	checked := 0
	for _, a := range d.Accounts {
		loc, _ := a.Location()
		today := civil.In(now, loc)
		days := []civil.Date{a.StartDate, today.AddDays(-14), today.AddDays(-7), a.ClosedThrough(now), today}
		for _, ds := range cat {
			for _, day := range days {
				want, ok := d.Rows[a.ID][ds.Name][day.String()]
				if !ok {
					t.Fatalf("Rows has no %s %s %s", a.ID, ds.Name, day)
				}
				start, end := a.Window(day)
				date, _ := civil.Parse(day.String())
				prov, err := sourcetest.Rows(context.Background(), src, source.Query{AccountID: a.ID, Dataset: ds, Day: date, Start: start, End: end},
					func([]any) error { return nil })
				if err != nil {
					t.Fatalf("%s %s %s: %v", a.ID, ds.Name, day, err)
				}
				if prov.RowCount != want {
					t.Errorf("%s %s %s: source %d rows, Demo.Rows %d", a.Name, ds.Name, day, prov.RowCount, want)
				}
				checked++
			}
		}
		// Today's rows are in the source (daybook must never export them).
		if n := d.Rows[a.ID]["events"][today.String()]; n == 0 {
			t.Errorf("%s: no events today", a.Name)
		}
		if n := d.Rows[a.ID]["daily_stats"][today.String()]; n == 0 {
			t.Errorf("%s: no daily_stats today", a.Name)
		}
		if want := a.StartDate.DaysUntil(today) + 1; len(d.Rows[a.ID]["events"]) != want {
			t.Errorf("%s: Rows has %d days, want %d", a.Name, len(d.Rows[a.ID]["events"]), want)
		}
	}
	// Account 1's backfill reaches before the data: empty partitions.
	a1 := d.Accounts[0]
	for _, ds := range cat {
		if n := d.Rows[a1.ID][ds.Name][a1.StartDate.String()]; n != 0 {
			t.Errorf("account 1 %s %s: %d rows before the data", ds.Name, a1.StartDate, n)
		}
	}
	if checked == 0 {
		t.Fatal("nothing checked")
	}
}
