//go:build !noduckdb

package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	gluetypes "github.com/aws/aws-sdk-go-v2/service/glue/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/icetable"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// icebergTable reads the account's events table as a reader would.
func (e *env) icebergTable() *table.Table {
	e.t.Helper()
	b := bucket.New(e.s3, e.acct.Destination.Bucket, bucket.Options{})
	tbl, err := icetable.Load(e.ctx, b, tableLocation(e.prefix, "events"))
	if err != nil {
		e.t.Fatal(err)
	}
	return tbl
}

// tableRows reads tbl's current snapshot with iceberg-go: event ids per
// UTC day of occurred_at, and the data files per day of the partition.
func (e *env) tableRows(tbl *table.Table) (map[civil.Date]int64, map[civil.Date][]string) {
	e.t.Helper()
	tasks, err := tbl.Scan().PlanFiles(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	files := map[civil.Date][]string{}
	for _, task := range tasks {
		day := civil.FromEpochDays(int32(task.File.Partition()[1000].(iceberg.Date)))
		files[day] = append(files[day], strings.TrimPrefix(task.File.FilePath(), "s3://"+e.acct.Destination.Bucket+"/"))
	}
	for _, f := range files {
		slices.Sort(f)
	}
	at, err := tbl.Scan().ToArrowTable(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	defer at.Release()
	rows := map[civil.Date]int64{}
	rr := array.NewTableReader(at, 1024)
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		ts := rec.Column(2).(*array.Timestamp)
		for i := range int(rec.NumRows()) {
			rows[civil.Of(ts.Value(i).ToTime(arrow.Microsecond))]++
		}
	}
	return rows, files
}

// wantTable: per day, the table's files are exactly the committed
// manifest's and its rows, read back, the manifest's row count; the folder
// holds exactly the manifest's files, the manifest, scripts and _SUCCESS.
func (e *env) wantTable(days ...civil.Date) {
	e.t.Helper()
	rows, files := e.tableRows(e.icebergTable())
	if len(files) != len(days) {
		e.t.Fatalf("the table holds days %v, want %v", slices.Collect(maps.Keys(files)), days)
	}
	for _, day := range days {
		m := e.committed("events", day)
		var keys []string
		for _, f := range m.Files {
			keys = append(keys, f.Key)
		}
		slices.Sort(keys)
		if !slices.Equal(files[day], keys) || rows[day] != m.Totals.Rows {
			e.t.Fatalf("%s: the table has files %v and %d rows; generation %d has %v and %d rows", day, files[day], rows[day], m.Generation, keys, m.Totals.Rows)
		}
		for key := range e.list(e.partPrefix("events", day)) {
			name := strings.TrimPrefix(key, e.partPrefix("events", day))
			if !slices.Contains(keys, key) && name != layout.ManifestName && name != layout.SuccessName && !strings.HasPrefix(name, layout.LoadDir+"/") {
				e.t.Fatalf("%s: an extra object %s in the folder", day, key)
			}
		}
	}
}

// TestIcebergTableFollowsGenerations: with table_format iceberg, each
// committed generation is the day's files in the table's current snapshot,
// read back by iceberg-go with the manifest's rows; a re-export replaces
// the day (fewer files), its snapshot names generation, reason and manifest.
func TestIcebergTableFollowsGenerations(t *testing.T) {
	e := newEnv(t, envOpts{maxFileBytes: smallFileBytes, rowGroupRows: smallGroupRows, tableFormat: account.TableFormatIceberg})
	day2 := testDay.AddDays(1)
	e.insert("events", genRows("events", testDay, manyRows)...)
	e.insert("events", genRows("events", day2, 300)...)
	e.export("events", testDay)
	// The version hint of day2's delivery fails to write: the delivery
	// stands, and the run says so once, naming the table.
	e.out.reset()
	e.failOnce(putOf("/metadata/" + icetable.VersionHintName))
	e.export("events", day2)
	e.faults.Set(nil, nil)
	table := "s3://" + e.acct.Destination.Bucket + "/" + tableLocation(e.prefix, "events")
	wantHintWarning := func() {
		t.Helper()
		var hints []string
		for line := range strings.Lines(e.out.String()) {
			if strings.Contains(line, "version hint not written") {
				hints = append(hints, line)
			}
		}
		if len(hints) != 1 || !strings.Contains(hints[0], `"level":"WARN"`) || !strings.Contains(hints[0], `"table":"`+table+`"`) ||
			!strings.Contains(hints[0], errInjected.Error()) {
			t.Fatalf("want one warning of the unwritten version hint of %s with its error, got %q", table, hints)
		}
	}
	wantHintWarning()
	if m := e.committed("events", testDay); len(m.Files) < 3 {
		t.Fatalf("want several files, got %d", len(m.Files))
	}
	e.wantTable(testDay, day2)

	if _, err := e.db.Exec(`DELETE FROM events WHERE account_id = ? AND event_id >= ?`, e.acct.ID, "evt_"+testDay.String()+"_000030"); err != nil {
		t.Fatal(err)
	}
	// The re-export's withdrawal (step 2) fails its hint the same way.
	e.out.reset()
	e.failOnce(putOf("/metadata/" + icetable.VersionHintName))
	if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
		t.Fatal(err)
	}
	e.faults.Set(nil, nil)
	wantHintWarning()
	e.wantTable(testDay, day2)
	snap := e.icebergTable().CurrentSnapshot()
	if p := snap.Summary.Properties; p[icetable.PropGeneration] != "2" || p[icetable.PropReason] != "manual" || p[icetable.PropDay] != testDay.String() ||
		p[icetable.PropManifest] != "s3://"+e.acct.Destination.Bucket+"/"+e.partPrefix("events", testDay)+layout.ManifestName {
		t.Fatalf("the snapshot's summary: %v", p)
	}
}

// TestIcebergCrashConverges: a run stopped at its table withdrawal or its
// table delivery fails its attempt with nothing recorded as committed;
// the table stays readable with only existing files, and the retry
// converges on the table and the folder agreeing.
func TestIcebergCrashConverges(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after bool
		n     int // the n-th metadata write of the re-export
	}{
		{"the withdrawal's metadata write fails", false, 1},
		{"the delivery's metadata write fails", false, 2},
		{"crash after the delivery's metadata write", true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOpts{maxFileBytes: smallFileBytes, rowGroupRows: smallGroupRows, tableFormat: account.TableFormatIceberg})
			e.insert("events", genRows("events", testDay, manyRows)...)
			e.export("events", testDay)
			e.wantTable(testDay)
			n := 0
			crash := errors.New("crash")
			hook := func(c buckettest.Call) error {
				if c.Op == buckettest.OpPut && strings.HasSuffix(c.Key, ".metadata.json") {
					if n++; n == tc.n {
						return crash
					}
				}
				return nil
			}
			if tc.after {
				e.faults.Set(nil, hook)
			} else {
				e.faults.Set(hook, nil)
			}
			if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
				t.Fatalf("a recorded failure is a done message: %v", err)
			}
			e.faults.Set(nil, nil)
			r := e.row("events", testDay)
			if r.State != ledger.StateFailed || !strings.Contains(r.LastError, "Iceberg table") {
				t.Fatalf("row %s, last error %q", r.State, r.LastError)
			}
			// Readable, with only existing files, whatever the step.
			_, files := e.tableRows(e.icebergTable())
			for _, keys := range files {
				for _, k := range keys {
					if e.get(k) == nil {
						t.Fatalf("the current snapshot references %s, which is gone", k)
					}
				}
			}
			if r := e.retry("events", testDay); r.State != ledger.StateCompleted {
				t.Fatalf("retry: %s %s", r.State, r.LastError)
			}
			e.wantTable(testDay)
		})
	}
}

// TestIcebergSlicedDayIsOneSnapshot: invariant (e). A re-export in slices
// withdraws the day once, when its plan begins the generation, and the
// commit of the last slice delivers every slice's files in one snapshot.
func TestIcebergSlicedDayIsOneSnapshot(t *testing.T) {
	e := newEnv(t, envOpts{tableFormat: account.TableFormatIceberg, ownQueue: true})
	e.insert("events", genRows("events", testDay, 2000)...)
	e.export("events", testDay)
	e.wantTable(testDay)

	e.rebuild(map[string]string{"SLICE_ROWS": "1000"}) // a deployment that slices above 1000 rows
	if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
		t.Fatal(err)
	}
	if _, files := e.tableRows(e.icebergTable()); len(files) != 0 {
		t.Fatalf("while its slices run the table holds %v", files)
	}
	bodies := e.receive(e.svc.QueueURL)
	if len(bodies) != 2 {
		t.Fatalf("%d slice messages", len(bodies))
	}
	for i := range 2 {
		if err := e.process(bodies[i]); err != nil {
			t.Fatal(err)
		}
	}
	e.wantTable(testDay)
	tbl := e.icebergTable()
	deliveries := 0
	for _, s := range tbl.Metadata().Snapshots() {
		if p := s.Summary.Properties; p[icetable.PropGeneration] == "2" && p[icetable.PropOperation] == "deliver" {
			deliveries++
		}
	}
	if m := e.committed("events", testDay); deliveries != 1 || m.Generation != 2 || !strings.Contains(m.Files[0].Key, "part-s0000-") {
		t.Fatalf("%d deliveries of generation 2; manifest generation %d, files %v", deliveries, m.Generation, m.Files)
	}
}

// TestIcebergGlueRegistration: with destination.glue the table is
// registered in Glue (moto's) as Athena reads an Iceberg table. While the
// database is missing every export still commits (the table too) and only
// the registration fails; once it exists, the table's next delivery
// registers the current metadata, and each later one moves the entry on.
func TestIcebergGlueRegistration(t *testing.T) {
	db := fmt.Sprintf("daybook_glue_%d", runs.Add(1))
	e := newEnv(t, envOpts{tableFormat: account.TableFormatIceberg, glue: &account.GlueTables{Database: db, TablePrefix: "acme_"}})
	cfg, _ := deployed(t)
	gc := glue.NewFromConfig(cfg)
	name := "acme_events"
	registered := func() string {
		t.Helper()
		out, err := gc.GetTable(e.ctx, &glue.GetTableInput{DatabaseName: &db, Name: &name})
		if err != nil {
			t.Fatal(err)
		}
		if p := out.Table.Parameters; p[icetable.GlueParamTableType] != icetable.GlueIceberg {
			t.Fatalf("registered as %v", p)
		}
		return out.Table.Parameters[icetable.GlueParamMetadata]
	}
	e.out.reset()
	lines := e.out
	failures := func() int { return strings.Count(lines.String(), `"GlueRegistrationFailures":1`) }
	day2 := testDay.AddDays(1)
	e.insert("events", genRows("events", testDay, 200)...)
	e.insert("events", genRows("events", day2, 100)...)
	if r := e.export("events", testDay); r.State != ledger.StateCompleted {
		t.Fatalf("with no Glue database the export is %s: %s", r.State, r.LastError)
	}
	if n := failures(); n != 1 {
		t.Fatalf("the failed registration is counted %d times, want once:\n%s", n, lines.String())
	}
	e.wantTable(testDay)
	if _, err := gc.GetTable(e.ctx, &glue.GetTableInput{DatabaseName: &db, Name: &name}); err == nil {
		t.Fatal("a table was registered in a database that does not exist")
	}
	if _, err := gc.CreateDatabase(e.ctx, &glue.CreateDatabaseInput{DatabaseInput: &gluetypes.DatabaseInput{Name: &db}}); err != nil {
		t.Fatal(err)
	}
	e.export("events", day2)
	if got, want := registered(), e.icebergTable().MetadataLocation(); got != want {
		t.Fatalf("Glue names %s, the table is at %s", got, want)
	}
	if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
		t.Fatal(err)
	}
	e.wantTable(testDay, day2)
	if got, want := registered(), e.icebergTable().MetadataLocation(); got != want {
		t.Fatalf("after the re-export Glue names %s, the table is at %s", got, want)
	}
	if n := failures(); n != 1 {
		t.Errorf("registrations that worked are counted as failures: %d in all, want 1", n)
	}
}

// TestIcebergBrokenTableKeepsFilesFlowing: the table's newest metadata
// file is empty (another tool's, or planted). Every later export of the
// dataset still delivers its day (the folder, _manifest.json, _SUCCESS),
// new days and re-exports alike, and the ledger records the generation
// with its table error: the code table_broken, the object at fault and the
// repair command. Before, each export failed as "internal: withdraw …
// parse table metadata vN", the folders included, and a requeue did not
// help.
func TestIcebergBrokenTableKeepsFilesFlowing(t *testing.T) {
	e := newEnv(t, envOpts{tableFormat: account.TableFormatIceberg})
	day2, day3 := testDay.AddDays(1), testDay.AddDays(2)
	for _, d := range []civil.Date{testDay, day2, day3} {
		e.insert("events", genRows("events", d, 40)...)
	}
	e.export("events", testDay)
	e.wantTable(testDay)
	loc := tableLocation(e.prefix, "events")
	n := icetable.VersionOf(e.icebergTable().MetadataLocation())
	broken := icetable.MetadataKey(loc, n+1)
	e.putObject(broken, nil)
	e.putObject(icetable.VersionHintKey(loc), []byte(fmt.Sprint(n+1)))

	check := func(day civil.Date, gen int64) {
		t.Helper()
		r := e.row("events", day)
		if r.State != ledger.StateCompleted || r.Generation != gen {
			t.Fatalf("%s: row %s generation %d (%s); want completed generation %d", day, r.State, r.Generation, r.LastError, gen)
		}
		if m := e.committed("events", day); m.Generation != gen || m.Totals.Rows != 40 {
			t.Fatalf("%s: the folder holds generation %d with %d rows", day, m.Generation, m.Totals.Rows)
		}
		want := []string{string(manifest.CodeTableBroken) + ": ", broken, icetable.RepairCommand(e.acct.ID, "events")}
		for _, w := range want {
			if !strings.Contains(r.TableError, w) {
				t.Fatalf("%s: the ledger's table error %q does not say %q", day, r.TableError, w)
			}
		}
	}
	e.export("events", day2)
	check(day2, 1)
	e.export("events", day3)
	check(day3, 1)
	// A re-export of a day the table holds: withdrawn from nothing, delivered.
	if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
		t.Fatal(err)
	}
	check(testDay, 2)
	if b := e.get(broken); b == nil || len(b) != 0 {
		t.Fatalf("the broken metadata file was changed: %q", b)
	}
}
