package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/bucketdocs"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/leakcheck"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/source"
)

// wantDocs is what the env's account should have in its bucket now.
func (e *env) wantDocs(datasets ...string) []bucketdocs.File {
	e.t.Helper()
	in := bucketdocs.Input{Bucket: e.acct.Destination.Bucket, Prefix: e.prefix, Format: "parquet", Compression: "snappy",
		TimeZone: "UTC", SettleDelay: e.svc.SettleDelay, MaxFileBytes: e.exp.Config.maxFileBytes()}
	for _, name := range datasets {
		in.Datasets = append(in.Datasets, mustDataset(e.t, name))
	}
	files, err := bucketdocs.Files(in)
	if err != nil {
		e.t.Fatal(err)
	}
	return files
}

// checkDocs wants exactly files in the bucket, each marked with its hash and
// the README with the set's.
func (e *env) checkDocs(files []bucketdocs.File) {
	e.t.Helper()
	for _, f := range files {
		out, err := e.s3.HeadObject(e.ctx, &s3.HeadObjectInput{Bucket: &e.acct.Destination.Bucket, Key: &f.Key})
		if err != nil {
			e.t.Fatalf("head %s: %v", f.Key, err)
		}
		if got := e.get(f.Key); !bytes.Equal(got, f.Body) {
			e.t.Errorf("%s: stored body differs from the generated document", f.Key)
		}
		if out.Metadata[metaSHA256] != f.SHA256 || (f.Key == layout.ReadmeKey(e.prefix)) != (out.Metadata[metaDocsSHA256] != "") {
			e.t.Errorf("%s: metadata %v", f.Key, out.Metadata)
		}
	}
	readme := files[len(files)-1]
	out, err := e.s3.HeadObject(e.ctx, &s3.HeadObjectInput{Bucket: &e.acct.Destination.Bucket, Key: &readme.Key})
	if err != nil || out.Metadata[metaDocsSHA256] != bucketdocs.Hash(files) {
		e.t.Errorf("README set hash %v, want %s (err %v)", out.Metadata, bucketdocs.Hash(files), err)
	}
}

// TestBucketDocs: the first export writes the README and the schema
// documents; later exports make no request for them while nothing changed
// (issue 25 §3: the function remembers them current for DocsRecheck); a
// change of what the account receives HEADs and rewrites the README and
// writes only the schema documents that changed; a document replaced by
// hand is put back once DocsRecheck has passed; and a failed documents
// write never fails a committed export.
func TestBucketDocs(t *testing.T) {
	e := newEnv(t, envOpts{datasets: []string{"events"}})
	readme, evSchema, prSchema := layout.ReadmeKey(e.prefix), layout.SchemaKey(e.prefix, "events"), layout.SchemaKey(e.prefix, "profiles")
	puts := func(key string) int { return e.faults.Calls(buckettest.OpPut, key) }
	for _, ds := range []string{"events", "profiles"} {
		for d := range 5 {
			e.insert(ds, genRows(ds, testDay.AddDays(-d), 3)...)
		}
	}
	for i, tc := range []struct {
		name      string
		before    func()
		ds        string
		want      []string // the account's datasets the documents describe
		putReadme int      // README PUTs by this export
		putSchema map[string]int
		heads     int // README HEADs by this export
	}{
		{"first export writes them", nil, "events", []string{"events"}, 1, map[string]int{evSchema: 1}, 1},
		{"nothing changed: no request", nil, "events", []string{"events"}, 0, map[string]int{evSchema: 0}, 0},
		{"a dataset enabled", func() {
			e.acct.Datasets = []string{"events", "profiles"}
			if err := e.led.Accounts().PutAccount(e.ctx, e.acct); err != nil {
				t.Fatal(err)
			}
		}, "profiles", []string{"events", "profiles"}, 1, map[string]int{evSchema: 0, prSchema: 1}, 1},
		{"README replaced by hand", func() {
			if _, err := e.s3.PutObject(e.ctx, &s3.PutObjectInput{Bucket: &e.acct.Destination.Bucket, Key: &readme,
				Body: strings.NewReader("# edited\n")}); err != nil {
				t.Fatal(err)
			}
			e.clk.Advance(DocsRecheck)
		}, "events", []string{"events", "profiles"}, 1, map[string]int{evSchema: 0, prSchema: 0}, 1},
		{"unchanged again", nil, "profiles", []string{"events", "profiles"}, 0, map[string]int{evSchema: 0, prSchema: 0}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before()
			}
			heads, readmePuts := e.faults.Calls(buckettest.OpHead, readme), puts(readme)
			schemaPuts := map[string]int{}
			for k := range tc.putSchema {
				schemaPuts[k] = puts(k)
			}
			if row := e.export(tc.ds, testDay.AddDays(-i)); row.State != ledger.StateCompleted {
				t.Fatalf("export: %+v", row)
			}
			if n := e.faults.Calls(buckettest.OpHead, readme) - heads; n != tc.heads {
				t.Errorf("%d HEADs of the README, want %d", n, tc.heads)
			}
			if n := puts(readme) - readmePuts; n != tc.putReadme {
				t.Errorf("%d README PUTs, want %d", n, tc.putReadme)
			}
			for k, want := range tc.putSchema {
				if n := puts(k) - schemaPuts[k]; n != want {
					t.Errorf("%d PUTs of %s, want %d", n, k, want)
				}
			}
			e.checkDocs(e.wantDocs(tc.want...))
		})
	}

	t.Run("a failed write does not fail the export", func(t *testing.T) {
		e.acct.Datasets = []string{"events", "profiles", "daily_stats"}
		if err := e.led.Accounts().PutAccount(e.ctx, e.acct); err != nil {
			t.Fatal(err)
		}
		e.failOnce(putOf("/README.md"))
		defer e.faults.Set(nil, nil)
		e.insert("daily_stats", genRows("daily_stats", testDay, 4)...)
		if row := e.export("daily_stats", testDay); row.State != ledger.StateCompleted {
			t.Fatalf("export with a failed README write: %+v", row)
		}
		e.committed("daily_stats", testDay)
		e.faults.Set(nil, nil)
		e.export("daily_stats", testDay.AddDays(-1))
		e.checkDocs(e.wantDocs("events", "profiles", "daily_stats"))
	})
}

// TestNothingInternalInTheBucket exports every dataset from a source whose
// name is a database URL, then scans every object the exports wrote besides
// the data (README, schema documents, manifests, _SUCCESS, load scripts,
// delivery manifests, a failed day's included) for the source's name, host,
// user and database, its queries and tables, the text of the failures,
// requirement ids and AWS account ids.
func TestNothingInternalInTheBucket(t *testing.T) {
	all := []string{"events", "profiles", "daily_stats"}
	e := newEnv(t, envOpts{datasets: all})
	const dsn = "postgres://daybook_reader:hunter2@db-7.internal.example:5432/analytics_prod?sslmode=require"
	src, err := source.NewSQL(e.db, dataset.DialectSQLite, dsn)
	if err != nil {
		t.Fatal(err)
	}
	e.exp.Source = src
	for _, ds := range all {
		e.insert(ds, genRows(ds, testDay, 6)...)
		e.export(ds, testDay)
	}
	e.export("events", testDay.AddDays(-1)) // an empty day
	e.clk.Advance(time.Hour)
	// A manual re-export: generation 2, reason manual.
	if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
		t.Fatal(err)
	}
	if m := e.committed("events", testDay); m.Generation != 2 {
		t.Fatalf("re-export committed generation %d", m.Generation)
	}
	// Two failed exports of the next day, whose errors (in the ledger)
	// carry the source's name and the row: its delivery manifest says
	// their codes and sentences, nothing of the errors.
	next := testDay.AddDays(1)
	bad := genRows("events", next, 2)
	bad[1][6] = "NaN"
	e.insert("events", bad...)
	failed := func(ds string) ledger.Row {
		t.Helper()
		if err := e.process(jobBody(t, e.claim(ds, next, ""))); err != nil {
			t.Fatalf("a recorded failure is a done message: %v", err)
		}
		return e.notCommitted(ds, next)
	}
	contains(t, "ledger error", failed("events").LastError, "schema_mismatch: ", "row 2", "column value")
	closed, _ := sourceDB(t, false)
	closed.Close()
	if e.exp.Source, err = source.NewSQL(closed, dataset.DialectSQLite, dsn); err != nil {
		t.Fatal(err)
	}
	contains(t, "ledger error", failed("profiles").LastError, "source_unavailable: ", "daybook_reader@db-7.internal.example:5432/analytics_prod")
	if d := e.delivery(next); len(d.DatasetsMissing) != 3 || d.DatasetsMissing[0].Cause != manifest.CodeSchemaMismatch ||
		d.DatasetsMissing[1].Cause != manifest.CodeSourceUnavailable || d.DatasetsMissing[2].Code != manifest.CodeNotExportedYet {
		t.Errorf("delivery manifest of %s: missing %+v", next, d.DatasetsMissing)
	}

	kinds := map[string]int{}
	for _, key := range sortedKeys(e.list(e.prefix + "/")) {
		if layout.IsDataKey(key) {
			continue
		}
		switch {
		case strings.HasSuffix(key, "/README.md"):
			kinds["readme"]++
		case strings.Contains(key, "/_schemas/"):
			kinds["schema"]++
		case strings.Contains(key, "/_manifests/"):
			kinds["delivery manifest"]++
		case strings.HasSuffix(key, "/_manifest.json"):
			kinds["manifest"]++
		case strings.HasSuffix(key, "/_SUCCESS"):
			kinds["_SUCCESS"]++
		case strings.Contains(key, "/_load/"):
			kinds["load script"]++
		case strings.Contains(key, "/"+layout.ChangesDir+"/"):
			kinds["change-log entry"]++
		default:
			t.Errorf("unexpected object %s", key)
		}
		for _, p := range leakcheck.Scan(key, e.get(key), dsn, "daybook_reader", "hunter2", "db-7.internal.example", "internal.example",
			"analytics_prod", "5432", "sslmode", "database is closed", "row 2", "column value", "NaN") {
			t.Error(p)
		}
	}
	want := map[string]int{"readme": 1, "schema": 3, "delivery manifest": 3, "manifest": 4, "_SUCCESS": 4, "load script": 4 * 6,
		"change-log entry": 5} // one per committed generation: the re-export's too
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d %s objects scanned, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}
}
