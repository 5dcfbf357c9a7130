package main

import (
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// Small files. The exporter rolls when the bytes handed to the upload pass
// MaxFileBytes, and parquet-go hands them over through a 32 KiB write
// buffer, so files come out at about 32-40 KiB whatever smaller limit is set:
// 2500 generated events rows (~190 KiB) make several part files, each far
// under the 5 MiB multipart minimum, so each file is one PutObject.
const (
	smallFileBytes = 6 << 10
	smallGroupRows = 50
	manyRows       = 2500
)

// TestCrashPointsConverge re-exports a committed partition and fails the
// run at each point of the commit protocol. Each time nothing is committed
// (no _SUCCESS, no open multipart upload, the ledger row failed with the
// error) and the ledger's retry converges on a partition that holds exactly
// what its manifest lists (E3, E4).
func TestCrashPointsConverge(t *testing.T) {
	for _, tc := range []struct {
		name    string
		after   Step   // crash after this step; "" = the second data file fails
		wantErr string // in the ledger row's last_error
	}{
		{"second data file fails", "", "part-00001.parquet"},
		{"after data written", StepDataWritten, "stopped after data_written"},
		{"after stale deleted", StepStaleDeleted, "stopped after stale_deleted"},
		{"after manifest", StepManifest, "stopped after manifest_written"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOpts{maxFileBytes: smallFileBytes, rowGroupRows: smallGroupRows})
			e.insert("events", genRows("events", testDay, manyRows)...)
			e.export("events", testDay)
			m1 := e.committed("events", testDay)
			if len(m1.Files) < 3 {
				t.Fatalf("want several files, got %d: %+v", len(m1.Files), m1.Files)
			}
			t.Logf("generation 1: %d files, %d bytes", len(m1.Files), m1.Totals.Bytes)

			if tc.after == "" {
				e.faults.set(once(func(k string) bool { return strings.HasSuffix(k, "/part-00001.parquet") }), nil)
			} else {
				e.exp.After = func(s Step) error {
					if s == tc.after {
						return errInjected
					}
					return nil
				}
			}
			// A manual re-export, which crashes.
			if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
				t.Fatalf("a recorded failure is a done message: %v", err)
			}
			r := e.notCommitted("events", testDay)
			contains(t, "last_error", r.LastError, tc.wantErr, errInjected.Error())
			if r.Generation != 1 || r.Attempts != 1 || r.Reason != ledger.ReasonManual {
				t.Errorf("failed row %+v", r)
			}
			if tc.after == "" {
				// The first file of the new run was written and stays until a
				// run commits; the one that failed is not there.
				keys := e.list(e.partPrefix("events", testDay))
				if _, ok := keys[e.partPrefix("events", testDay)+"part-00000.parquet"]; !ok {
					t.Errorf("part-00000 missing: %v", sortedKeys(keys))
				}
			}

			e.faults.set(nil, nil)
			e.exp.After = nil
			r = e.retry("events", testDay)
			m2 := e.committed("events", testDay)
			if r.Generation != 2 || m2.Generation != 2 || m2.Reason != "retry" || m2.Attempt != 2 || m2.Totals.Rows != manyRows {
				t.Errorf("after the retry: row %+v, manifest generation %d reason %s attempt %d rows %d",
					r, m2.Generation, m2.Reason, m2.Attempt, m2.Totals.Rows)
			}
		})
	}
}

// TestFewerFilesLeavesNoOrphan re-exports a day that shrank: the parts the
// longer run wrote are gone, only the new generation remains (E3).
func TestFewerFilesLeavesNoOrphan(t *testing.T) {
	e := newEnv(t, envOpts{maxFileBytes: smallFileBytes, rowGroupRows: smallGroupRows})
	e.insert("events", genRows("events", testDay, manyRows)...)
	e.export("events", testDay)
	m1 := e.committed("events", testDay)
	if len(m1.Files) < 3 {
		t.Fatalf("want several files, got %d", len(m1.Files))
	}
	if _, err := e.db.Exec(`DELETE FROM events WHERE account_id = ? AND event_id >= ?`, e.acct.ID, "evt_"+testDay.String()+"_000030"); err != nil {
		t.Fatal(err)
	}
	if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
		t.Fatal(err)
	}
	m2 := e.committed("events", testDay)
	if m2.Generation != 2 || m2.Totals.Rows != 30 || len(m2.Files) != 1 || m2.Reason != "manual" {
		t.Fatalf("generation 2: %+v totals %+v", m2.Files, m2.Totals)
	}
	pp := e.partPrefix("events", testDay)
	var got []string
	for _, k := range sortedKeys(e.list(pp)) {
		rel := strings.TrimPrefix(k, pp)
		if strings.HasPrefix(rel, layout.LoadDir+"/") {
			rel = layout.LoadDir + "/*"
		}
		if len(got) == 0 || got[len(got)-1] != rel {
			got = append(got, rel)
		}
	}
	want := []string{"_SUCCESS", "_load/*", "_manifest.json", "part-00000.parquet"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("partition after the shorter re-export: %v, want %v (generation 1 had %d files)", got, want, len(m1.Files))
	}
}
