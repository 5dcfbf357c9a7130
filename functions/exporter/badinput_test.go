package main

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/partition"
)

// TestBadRowsFailThePartition: a source row that does not fit the declared
// schema (or its day) fails the partition with the column, the row and the
// value named in the ledger, and nothing is committed (D1, E4). NaN and
// infinite doubles are such rows, in either file format. The customer's
// delivery manifest says schema_mismatch, not the row's contents.
func TestBadRowsFailThePartition(t *testing.T) {
	for _, tc := range []struct {
		name    string
		format  string
		relaxed bool
		mutate  func(row []any)
		want    []string
	}{
		{"null in a required column", "", true, func(r []any) { r[1] = nil }, // event_type
			[]string{"row 2", "column event_type", "null in required column"}},
		{"wrong type", "", false, func(r []any) { r[6] = "lots" }, // value DOUBLE
			[]string{"row 2", "column value", `"lots"`}},
		// SQLite compares the text: this value sorts inside the day's window,
		// after every real instant of the day (so it is row 3).
		{"unparsable timestamp", "", false, func(r []any) { r[2] = testDay.String() + "Tlate" }, // occurred_at
			[]string{"row 3", "column occurred_at", `"2026-03-05Tlate"`}},
		// So does this one, which is 04:00 UTC on the next day.
		{"partition column outside the day", "", false, func(r []any) { r[2] = testDay.String() + "T23:00:00.000000-05:00" },
			[]string{"row 3", "column occurred_at", "outside the partition's day 2026-03-05", `"2026-03-06T04:00:00.000000Z"`}},
		{"json not UTF-8", "", false, func(r []any) { r[9] = []byte("{\"name\":\"caf\xe9\"}") },
			[]string{"row 2", "column attributes", "not valid UTF-8", `"{\"name\":\"caf\xe9\"}"`}},
		{"NaN into parquet", "parquet", false, func(r []any) { r[6] = "NaN" },
			[]string{"row 2", "column value", "NaN is not a number", `"NaN"`}},
		{"NaN into ndjson", "ndjson", false, func(r []any) { r[6] = "NaN" },
			[]string{"row 2", "column value", "NaN is not a number"}},
		{"infinity into parquet", "parquet", false, func(r []any) { r[6] = math.Inf(1) },
			[]string{"row 2", "column value", "infinity is not a number", "+Inf"}},
		{"infinity into ndjson", "ndjson", false, func(r []any) { r[6] = math.Inf(-1) },
			[]string{"row 2", "column value", "infinity is not a number", "-Inf"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOpts{relaxed: tc.relaxed, format: tc.format})
			rows := genRows("events", testDay, 3)
			tc.mutate(rows[1])
			e.insert("events", rows...)
			c := e.claim("events", testDay, "")
			if err := e.process(jobBody(t, c)); err != nil {
				t.Fatalf("a recorded failure is a done message: %v", err)
			}
			r := e.notCommitted("events", testDay)
			contains(t, "last_error", r.LastError, append([]string{"schema_mismatch: "}, tc.want...)...)
			if left := e.list(e.partPrefix("events", testDay)); len(left) != 0 {
				t.Errorf("a refused partition left objects: %v", sortedKeys(left))
			}
			// The delivery manifest says why the day is missing, in words
			// that carry nothing of the row.
			d := e.delivery(testDay)
			if d.Complete || len(d.DatasetsMissing) != 1 {
				t.Fatalf("delivery %+v", d)
			}
			if m := d.DatasetsMissing[0]; m.Code != manifest.CodeSchemaMismatch || strings.Contains(m.Reason, tc.want[1]) {
				t.Errorf("missing %+v", m)
			}
		})
	}
}

// TestRefusedRequests: manual requests that can never succeed are refused
// with an error naming the field and value, and write nothing to the bucket
// or the ledger; they go back to SQS and on to the DLQ (E1, E5).
func TestRefusedRequests(t *testing.T) {
	e := newEnv(t, envOpts{datasets: []string{"events", "daily_stats"}})
	e.insert("events", genRows("events", testDay, 3)...)
	// testNow is 2026-03-10T12:00Z: the last closed day is 2026-03-09.
	for _, tc := range []struct {
		name    string
		m       jobs.Manual
		is      error
		want    []string
		account string // ledger row that must not exist
		ds, day string
	}{
		{"unknown dataset", jobs.Manual{Dataset: "visitors", Day: "2026-03-05"}, ErrRejected,
			[]string{`dataset "visitors"`, "unknown dataset"}, "", "visitors", "2026-03-05"},
		{"dataset not enabled", jobs.Manual{Dataset: "profiles", Day: "2026-03-05"}, ErrRejected,
			[]string{`dataset "profiles" is not enabled`}, "", "profiles", "2026-03-05"},
		{"unknown account", jobs.Manual{AccountID: "acct_aaaaaaaaaaaaaaaa", Dataset: "events", Day: "2026-03-05"}, ErrRejected,
			[]string{`account_id "acct_aaaaaaaaaaaaaaaa"`, "no such account"}, "acct_aaaaaaaaaaaaaaaa", "events", "2026-03-05"},
		{"invalid day", jobs.Manual{Dataset: "events", Day: "2026-02-30"}, jobs.ErrMalformed,
			[]string{`day "2026-02-30"`, "YYYY-MM-DD"}, "", "", ""},
		{"missing dataset", jobs.Manual{Day: "2026-03-05"}, jobs.ErrMalformed,
			[]string{"dataset is required"}, "", "", ""},
		{"before the account's start date", jobs.Manual{Dataset: "events", Day: "2026-02-27"}, ErrRejected,
			[]string{`day "2026-02-27" is before account`, "start date 2026-03-01"}, "", "events", "2026-02-27"},
		{"today", jobs.Manual{Dataset: "events", Day: "2026-03-10"}, ErrRejected,
			[]string{`day "2026-03-10" is not closed`, "last closed day is 2026-03-09"}, "", "events", "2026-03-10"},
		{"future day", jobs.Manual{Dataset: "events", Day: "2027-01-01"}, ErrRejected,
			[]string{`day "2027-01-01" is not closed`}, "", "events", "2027-01-01"},
		{"range ending today", jobs.Manual{Dataset: "events", From: "2026-03-08", To: "2026-03-10"}, ErrRejected,
			[]string{`to "2026-03-10" is not closed`}, "", "events", "2026-03-08"},
		{"range backwards", jobs.Manual{Dataset: "events", From: "2026-03-08", To: "2026-03-01"}, jobs.ErrMalformed,
			[]string{`to "2026-03-01" is before from "2026-03-08"`}, "", "", ""},
		{"unknown field", jobs.Manual{}, jobs.ErrMalformed, []string{"unknown field"}, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.m.AccountID == "" {
				tc.m.AccountID = e.acct.ID
			}
			body := manualBody(t, tc.m)
			if tc.name == "unknown field" {
				body = `{"kind":"manual","account_id":"` + e.acct.ID + `","dataset":"events","day":"2026-03-05","force":true}`
			}
			err := e.process(body)
			if !errors.Is(err, tc.is) {
				t.Fatalf("Process = %v, want %v", err, tc.is)
			}
			contains(t, "error", err.Error(), tc.want...)
			if objs := e.list(""); len(objs) != 0 {
				t.Errorf("a refused request wrote to the bucket: %v", sortedKeys(objs))
			}
			if tc.ds != "" {
				acct := tc.account
				if acct == "" {
					acct = e.acct.ID
				}
				if r, err := e.led.Partitions().Get(e.ctx, partition.Key{AccountID: acct, Dataset: tc.ds, Day: civil.MustParse(tc.day)}); !errors.Is(err, ledger.ErrNotFound) {
					t.Errorf("a refused request wrote a ledger row: %+v (%v)", r, err)
				}
			}
		})
	}
}
