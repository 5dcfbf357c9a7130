// Package datasettest generates deterministic synthetic rows for tests and
// benchmarks, shaped like a real day of data (sorted times, low-cardinality
// types, NULLs, per-tenant attributes), so encoder measurements mean
// something. Like net/http/httptest it is only for tests.
package datasettest

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
)

// EventGen yields rows of the events dataset for one day, in occurred_at
// order, spread so that about rowsPerDay rows fill the day.
type EventGen struct {
	r        *rand.Rand
	at       time.Time
	stepMax  int
	n        uint64
	row      []any
	types    []string
	sessions []string
	users    []string
	attrs    []json.RawMessage
}

// NewEventGen returns a generator seeded with seed for day.
func NewEventGen(seed uint64, day civil.Date, rowsPerDay int) *EventGen {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	g := &EventGen{
		r:       r,
		at:      day.Start(time.UTC),
		stepMax: max(2, int(2*24*time.Hour/time.Microsecond)/max(1, rowsPerDay)),
		row:     make([]any, 10),
		types:   []string{"page_view", "page_view", "page_view", "click", "click", "search", "add_to_cart", "purchase", "signup", "login"},
	}
	for i := range 5000 {
		g.sessions = append(g.sessions, "sess_"+strconv.FormatUint(r.Uint64()>>20, 36)+strconv.Itoa(i))
	}
	for i := range 20000 {
		g.users = append(g.users, "user_"+strconv.Itoa(100000+i))
	}
	for i := range 1000 {
		g.attrs = append(g.attrs, json.RawMessage(`{"plan":"`+[]string{"free", "pro", "team"}[i%3]+
			`","utm_source":"ad_`+strconv.Itoa(i%37)+`","ab_bucket":`+strconv.Itoa(i%100)+`}`))
	}
	return g
}

// Next returns the next row. The slice is reused by the following call.
func (g *EventGen) Next() []any {
	r := g.r
	g.n++
	g.at = g.at.Add(time.Duration(r.IntN(g.stepMax)) * time.Microsecond)
	row := g.row
	// Random-looking but unique ids, like UUID-ish keys in real sources.
	row[0] = "evt_" + strconv.FormatUint(g.n*0x9E3779B97F4A7C15, 36)
	row[1] = g.types[r.IntN(len(g.types))]
	row[2] = g.at
	row[3] = g.at.Add(time.Duration(r.IntN(3_000_000)) * time.Microsecond)
	row[4], row[5], row[6], row[7], row[9] = nil, nil, nil, nil, nil
	if r.IntN(10) < 8 {
		row[4] = g.sessions[r.IntN(len(g.sessions))]
	}
	if r.IntN(10) < 6 {
		row[5] = g.users[r.IntN(len(g.users))]
	}
	if r.IntN(10) < 5 {
		row[6] = float64(r.IntN(100000)) / 100
	}
	if row[1] == "purchase" {
		row[7] = dataset.NewDecimal(int64(r.IntN(10_000_00)), 2)
	}
	row[8] = r.IntN(50) == 0
	if r.IntN(10) < 7 {
		row[9] = g.attrs[r.IntN(len(g.attrs))]
	}
	return row
}

// Batches returns the next rows rows as batches of up to size rows each,
// every batch a fresh one the caller may keep.
func (g *EventGen) Batches(ds dataset.Dataset, rows, size int) []*dataset.Batch {
	var out []*dataset.Batch
	for done := 0; done < rows; {
		b := dataset.NewBatch(ds, size)
		b.Reset(int64(done) + 1)
		for ; b.Len() < size && done < rows; done++ {
			if err := b.AppendRow(g.Next()); err != nil {
				panic(err) // the generator makes only valid rows
			}
		}
		out = append(out, b)
	}
	return out
}
