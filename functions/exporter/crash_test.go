package main

import (
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/partition"
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

// TestCrashPointsConverge re-exports a committed partition and stops the
// run at each point of the commit protocol, by failing the S3 call there
// (or letting it take effect and failing it after, as a crash right after
// it). Each time nothing is committed (no _SUCCESS, no open multipart
// upload, the ledger row failed with the error) and the ledger's retry
// converges on a partition that holds exactly what its manifest lists.
func TestCrashPointsConverge(t *testing.T) {
	type at func(pp string, c buckettest.Call) bool
	for _, tc := range []struct {
		name  string
		at    at
		after bool // the call at takes effect, then the run crashes
		// wantErr is in the ledger row's last_error, with the injected error.
		wantErr string
		// manifestGen is the generation of the _manifest.json the crash
		// leaves (0: none), which places the crash in the protocol.
		manifestGen int64
	}{
		{"after the old _SUCCESS is removed", func(pp string, c buckettest.Call) bool {
			return c.Op == buckettest.OpDelete && c.Key == pp+layout.SuccessName
		}, true, "remove old _SUCCESS", 1},
		{"after the first part (the second fails)", func(pp string, c buckettest.Call) bool {
			return c.Op == buckettest.OpPut && c.Key == pp+"part-00001.parquet"
		}, false, "part-00001.parquet", 1},
		{"after all parts (listing the stale objects fails)", func(pp string, c buckettest.Call) bool {
			return c.Op == buckettest.OpList && c.Key == pp
		}, false, "list s3://", 1},
		{"after stale deletion", func(pp string, c buckettest.Call) bool {
			return c.Op == buckettest.OpDeleteObjects
		}, true, "delete stale objects under s3://", 0},
		{"after the manifest and load scripts (_SUCCESS fails)", func(pp string, c buckettest.Call) bool {
			return c.Op == buckettest.OpPut && c.Key == pp+layout.SuccessName
		}, false, "write _SUCCESS", 2},
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

			pp := e.partPrefix("events", testDay)
			match := func(c buckettest.Call) bool { return tc.at(pp, c) }
			if tc.after {
				e.crashOnceAfter(match)
			} else {
				e.failOnce(match)
			}
			// A manual re-export, which crashes.
			if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
				t.Fatalf("a recorded failure is a done message: %v", err)
			}
			r := e.notCommitted("events", testDay)
			contains(t, "last_error", r.LastError, tc.wantErr, errInjected.Error())
			if r.Generation != 1 || r.Attempts != 1 || r.Reason != partition.ReasonManual {
				t.Errorf("failed row %+v", r)
			}
			if got := e.manifestGeneration(pp); got != tc.manifestGen {
				t.Errorf("the crash left a manifest of generation %d, want %d", got, tc.manifestGen)
			}
			keys := e.list(pp)
			if _, ok := keys[pp+"part-00000.parquet"]; !ok {
				// Of generation 1, or the first file of the new run, which
				// stays until a run commits.
				t.Errorf("part-00000 missing: %v", sortedKeys(keys))
			}

			e.faults.Set(nil, nil)
			r = e.retry("events", testDay)
			m2 := e.committed("events", testDay)
			if r.Generation != 2 || m2.Generation != 2 || m2.Reason != "retry" || m2.Attempt != 2 || m2.Totals.Rows != manyRows {
				t.Errorf("after the retry: row %+v, manifest generation %d reason %s attempt %d rows %d",
					r, m2.Generation, m2.Reason, m2.Attempt, m2.Totals.Rows)
			}
		})
	}
}

// manifestGeneration returns the generation of the partition's
// _manifest.json (0: none).
func (e *env) manifestGeneration(partPrefix string) int64 {
	e.t.Helper()
	b := e.get(partPrefix + layout.ManifestName)
	if b == nil {
		return 0
	}
	m, err := manifest.Decode(b)
	if err != nil {
		e.t.Fatal(err)
	}
	return m.Generation
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
