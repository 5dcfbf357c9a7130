package icetable

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/mototest"
	"github.com/daybook-dev/daybook/shared/devkit/parquetreaders"
	"github.com/daybook-dev/daybook/shared/encode"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/manifest"
)

var srv *motoserver.Server

func TestMain(m *testing.M) { os.Exit(mototest.RunTests(m, &srv)) }

const prefix = "tenant/acme"

var day1, day2 = civil.MustParse("2026-03-01"), civil.MustParse("2026-03-02")

// world is one test's bucket on moto (or the in-memory fake), its calls
// counted, with the events dataset's table in it.
type world struct {
	t      *testing.T
	ctx    context.Context
	faults *buckettest.Faults
	b      *bucket.Bucket
	ds     dataset.Dataset
	// ids are the event ids each day's current generation holds.
	ids map[civil.Date][]string
}

func newWorld(t *testing.T, fake bool) *world {
	t.Helper()
	ds, err := datasettest.Example(t).Get("events")
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, ctx: t.Context(), faults: &buckettest.Faults{}, ds: ds, ids: map[civil.Date][]string{}}
	name := "ice-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	name = strings.TrimRight(name[:min(len(name), 63)], "-")
	var api bucket.API
	if fake {
		api = buckettest.NewFake(name)
	} else {
		cfg, err := srv.Config(w.ctx)
		if err != nil {
			t.Fatal(err)
		}
		c := awsclient.NewS3(cfg)
		if _, err := c.CreateBucket(w.ctx, &s3.CreateBucketInput{Bucket: &name}); err != nil {
			t.Fatal(err)
		}
		api = c
	}
	w.b = bucket.New(w.faults.Wrap(api), name, bucket.Options{})
	return w
}

func (w *world) table() *Table {
	return &Table{Store: w.b, Location: strings.TrimSuffix(layout.ContractPrefix(prefix), "/") + "/" + w.ds.Name, Dataset: w.ds}
}

// export writes a generation of day as the folder protocol leaves it:
// files part-00000… of rows rows each (seeded by generation), and returns
// its table commit. Files of an earlier generation with the same names are
// overwritten; those beyond n are deleted.
func (w *world) export(day civil.Date, gen int64, files, rows int) Committed {
	w.t.Helper()
	g := datasettest.NewEventGen(uint64(gen)*1000+uint64(day.EpochDays()), day, rows*files*3)
	d := Committed{Day: day, Generation: gen, Reason: "scheduled", RunID: fmt.Sprintf("run-%d", gen),
		ManifestKey: layout.ManifestKey(prefix, w.ds.Name, day)}
	var ids []string
	for n := range files {
		var buf bytes.Buffer
		enc, err := encode.New(fileformat.Parquet, &buf, w.ds, encode.Options{})
		if err != nil {
			w.t.Fatal(err)
		}
		for range rows {
			row := g.Next()
			if len(w.ds.Columns) > len(row) {
				row = append(slices.Clone(row), "gen-"+strconv.FormatInt(gen, 10))
			}
			ids = append(ids, row[0].(string))
			if err := enc.Write(row); err != nil {
				w.t.Fatal(err)
			}
		}
		if err := enc.Close(); err != nil {
			w.t.Fatal(err)
		}
		key := layout.DataKey(prefix, w.ds.Name, day, n, ".parquet")
		if err := w.b.Put(w.ctx, key, buf.Bytes(), "application/vnd.apache.parquet"); err != nil {
			w.t.Fatal(err)
		}
		d.Files = append(d.Files, manifest.File{Key: key, Rows: int64(rows), Bytes: int64(buf.Len())})
	}
	for n := files; n < 8; n++ {
		if err := w.b.Delete(w.ctx, layout.DataKey(prefix, w.ds.Name, day, n, ".parquet")); err != nil {
			w.t.Fatal(err)
		}
	}
	slices.Sort(ids)
	w.ids[day] = ids
	return d
}

// load is the table as a reader finds it, by the version hint.
func (w *world) load() *table.Table {
	w.t.Helper()
	tbl, err := Load(w.ctx, w.b, w.table().Location)
	if err != nil {
		w.t.Fatal(err)
	}
	return tbl
}

// rows reads the table (at snapshot id, 0: current) with iceberg-go and
// returns the event ids per UTC day of occurred_at.
func (w *world) rows(tbl *table.Table, id int64) map[civil.Date][]string {
	w.t.Helper()
	var opts []table.ScanOption
	if id != 0 {
		opts = append(opts, table.WithSnapshotID(id))
	}
	at, err := tbl.Scan(opts...).ToArrowTable(w.ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	defer at.Release()
	out := map[civil.Date][]string{}
	rr := array.NewTableReader(at, 1024)
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		ids := rec.Column(0).(*array.String)
		ts := rec.Column(2).(*array.Timestamp)
		for i := range int(rec.NumRows()) {
			day := civil.Of(ts.Value(i).ToTime(arrow.Microsecond))
			out[day] = append(out[day], ids.Value(i))
		}
	}
	for _, v := range out {
		slices.Sort(v)
	}
	return out
}

// check asserts the current snapshot holds exactly want's days, each with
// the ids of its current generation, and references only files that
// exist with the sizes it records.
func (w *world) check(want ...civil.Date) {
	w.t.Helper()
	tbl := w.load()
	got := w.rows(tbl, 0)
	if len(got) != len(want) {
		w.t.Fatalf("table holds days %v, want %v", keys(got), want)
	}
	for _, d := range want {
		if !slices.Equal(got[d], w.ids[d]) {
			w.t.Fatalf("%s: table has %d rows, the generation %d", d, len(got[d]), len(w.ids[d]))
		}
	}
	w.filesExist(tbl)
}

// filesExist: invariant (a), every file of the current snapshot exists with
// the size the table records.
func (w *world) filesExist(tbl *table.Table) {
	w.t.Helper()
	if tbl.CurrentSnapshot() == nil {
		return
	}
	tasks, err := tbl.Scan().PlanFiles(w.ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, task := range tasks {
		key := strings.TrimPrefix(task.File.FilePath(), "s3://"+w.b.Name()+"/")
		info, err := w.b.Head(w.ctx, key)
		if err != nil {
			w.t.Fatalf("the current snapshot references %s: %v", key, err)
		}
		if info.Size != task.File.FileSizeBytes() {
			w.t.Fatalf("%s is %d bytes, the snapshot says %d", key, info.Size, task.File.FileSizeBytes())
		}
	}
}

// fs reads the table's files as a commit does, with fresh limits.
func (w *world) fs() *fsys {
	return &fsys{ctx: w.ctx, store: w.b, scope: newScope(w.b, w.table().Location, Limits{})}
}

func keys(m map[civil.Date][]string) []civil.Date {
	var out []civil.Date
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, civil.Date.Compare)
	return out
}

func mustAdd(t *testing.T, tb *Table, d Committed) Result {
	t.Helper()
	r, err := tb.Add(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustWithdraw(t *testing.T, tb *Table, day civil.Date, gen int64) Result {
	t.Helper()
	r, err := tb.Withdraw(t.Context(), day, gen)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestGenerationsReadBack: exports, a re-export with fewer files, and time
// travel, read back by iceberg-go per day against what each generation wrote.
func TestGenerationsReadBack(t *testing.T) {
	w := newWorld(t, false)
	tb := w.table()
	r1 := mustAdd(t, tb, w.export(day1, 1, 3, 200))
	w.check(day1)
	mustAdd(t, tb, w.export(day2, 1, 2, 150))
	w.check(day1, day2)

	tbl := w.load()
	snap := tbl.CurrentSnapshot()
	for k, v := range map[string]string{PropOperation: "deliver", PropDay: day2.String(), PropGeneration: "1", PropReason: "scheduled",
		PropManifest: "s3://" + w.b.Name() + "/" + layout.ManifestKey(prefix, "events", day2)} {
		if got := snap.Summary.Properties[k]; got != v {
			t.Errorf("summary %s = %q, want %q", k, got, v)
		}
	}
	w.icebird()
	// Time travel: the first snapshot holds day 1 alone, its files retained.
	if got := w.rows(tbl, r1.SnapshotID); len(got) != 1 || !slices.Equal(got[day1], w.ids[day1]) {
		t.Fatalf("snapshot %d holds %v", r1.SnapshotID, keys(got))
	}

	// A re-export of day 1: withdrawn before its files change, delivered after.
	if r := mustWithdraw(t, tb, day1, 2); !r.Changed {
		t.Fatal("withdraw changed nothing")
	}
	w.check(day2)
	mustAdd(t, tb, w.export(day1, 2, 1, 120))
	w.check(day1, day2)
	w.icebird()
	// Delivering it again changes nothing (a run repeated after its commit).
	if r := mustAdd(t, tb, Committed{Day: day1, Generation: 2, Files: []manifest.File{{Key: layout.DataKey(prefix, "events", day1, 0, ".parquet"), Rows: 120, Bytes: w.size(day1, 0)}}}); r.Changed {
		t.Fatal("a repeated table commit wrote a snapshot")
	}
	// Withdrawing a day the table lacks changes nothing either.
	if r := mustWithdraw(t, tb, civil.MustParse("2026-01-01"), 1); r.Changed {
		t.Fatal("withdrawing an absent day wrote a snapshot")
	}
}

func (w *world) size(day civil.Date, n int) int64 {
	w.t.Helper()
	info, err := w.b.Head(w.ctx, layout.DataKey(prefix, w.ds.Name, day, n, ".parquet"))
	if err != nil {
		w.t.Fatal(err)
	}
	return info.Size
}

// TestAddReplacesTheDay: a day delivered while the table still holds
// an earlier generation of it (files of other names) is replaced in the
// one snapshot.
func TestAddReplacesTheDay(t *testing.T) {
	w := newWorld(t, false)
	tb := w.table()
	mustAdd(t, tb, w.export(day1, 1, 2, 100))
	d := w.export(day1, 2, 1, 80)
	// Generation 2 wrote part-00000 over generation 1's; the day's old
	// files are replaced by the new one in one commit (one metadata version).
	before := w.load().MetadataLocation()
	r := mustAdd(t, tb, d)
	w.check(day1)
	if want := strings.Replace(before, "v2.", "v3.", 1); w.load().MetadataLocation() != want || r.Version != 3 {
		t.Fatalf("metadata %s (version %d) after %s: want one version more", w.load().MetadataLocation(), r.Version, before)
	}
}

// TestConcurrentDaysBothCommit: invariant (c). Writer A loads the table;
// before its conditional write of the next metadata version lands, writer
// B commits another day of the same table. A's write is refused
// (If-None-Match), it reloads and commits again: both days are in the table.
func TestConcurrentDaysBothCommit(t *testing.T) {
	for _, fake := range []bool{false, true} {
		t.Run(map[bool]string{false: "moto", true: "fake"}[fake], func(t *testing.T) {
			w := newWorld(t, fake)
			mustAdd(t, w.table(), w.export(day1, 1, 1, 50))
			dA, dB := w.export(day2, 1, 1, 60), w.export(civil.MustParse("2026-03-03"), 1, 1, 70)
			var inB bool
			var bErr error
			var bRes Result
			w.faults.Set(func(c buckettest.Call) error {
				if c.Op == buckettest.OpPut && strings.HasSuffix(c.Key, ".metadata.json") && !inB {
					inB = true
					bRes, bErr = w.table().Add(w.ctx, dB)
				}
				return nil
			}, nil)
			rA, err := w.table().Add(w.ctx, dA)
			w.faults.Set(nil, nil)
			if err != nil || bErr != nil {
				t.Fatalf("A: %v, B: %v", err, bErr)
			}
			if rA.Attempts != 2 || bRes.Attempts != 1 {
				t.Fatalf("A took %d attempts, B %d: want 2 and 1", rA.Attempts, bRes.Attempts)
			}
			w.check(day1, dA.Day, dB.Day)
		})
	}
}

// TestCommitCrashConverges: invariant (d). A table commit (and a withdrawal)
// is stopped at each S3 call it makes, before the call or right after it
// took effect; each time the table reads as a table whose current snapshot
// references only existing files, and the same step run again converges.
func TestCommitCrashConverges(t *testing.T) {
	w := newWorld(t, true)
	tb := w.table()
	mustAdd(t, tb, w.export(day1, 1, 2, 50))
	mustAdd(t, tb, w.export(day2, 1, 1, 40))
	// Count the calls of one table commit and one withdrawal.
	calls := func(f func()) int {
		var n int
		w.faults.Set(func(buckettest.Call) error { n++; return nil }, nil)
		f()
		w.faults.Set(nil, nil)
		return n
	}
	gen := int64(1)
	nw := calls(func() { gen++; mustWithdraw(t, tb, day1, gen) })
	nd := calls(func() { mustAdd(t, tb, w.export(day1, gen, 2, 50)) })
	t.Logf("a withdrawal makes %d calls, a table commit %d", nw, nd)
	crash := errors.New("crash")
	arm := func(i int, after bool) {
		var n int
		hook := func(buckettest.Call) error {
			if n++; n == i {
				return crash
			}
			return nil
		}
		if after {
			w.faults.Set(nil, hook)
		} else {
			w.faults.Set(hook, nil)
		}
	}
	for _, after := range []bool{false, true} {
		for i := 1; i <= nw; i++ {
			gen++
			arm(i, after)
			_, err := tb.Withdraw(w.ctx, day1, gen)
			w.faults.Set(nil, nil)
			if err != nil {
				w.filesExist(w.load())
				mustWithdraw(t, tb, day1, gen) // the next run begins again
			}
			w.check(day2) // invariant (a) while the folder is rewritten
			mustAdd(t, tb, w.export(day1, gen, 1+i%2, 30+i))
			w.check(day1, day2)
		}
		for i := 1; i <= nd; i++ {
			gen++
			mustWithdraw(t, tb, day1, gen)
			d := w.export(day1, gen, 1+i%2, 30+i)
			arm(i, after)
			_, err := tb.Add(w.ctx, d)
			w.faults.Set(nil, nil)
			if err != nil {
				w.filesExist(w.load())
				mustAdd(t, tb, d) // the step repeated (a redelivery)
			}
			w.check(day1, day2)
		}
	}
}

// TestCommitCostIsFlat: a commit's S3 requests do not grow with the table's
// age (no listing but the first table commit's, which finds no table and no
// hint; manifests merge), and its metadata file stays bounded (snapshots
// expire, old metadata versions are deleted).
func TestCommitCostIsFlat(t *testing.T) {
	w := newWorld(t, true)
	tb := w.table()
	tb.Retention = Retention{MaxAge: time.Hour, MaxSnapshots: 20}
	days, gens := 60, int64(3)
	// The figures in docs/performance.md: ICETABLE_DAYS=400
	// ICETABLE_GENERATIONS=20 with the default retention. That run
	// re-exports each day by a table commit alone (the day's old files out and
	// the new in, two snapshots in one metadata version), not a withdrawal
	// and a table commit: half the commits, the same table at the end, so it
	// fits this machine.
	withdraw := true
	if v, err := strconv.Atoi(os.Getenv("ICETABLE_DAYS")); err == nil {
		g, _ := strconv.Atoi(os.Getenv("ICETABLE_GENERATIONS"))
		days, gens, tb.Retention, withdraw = v, int64(max(g, 1)), DefaultRetention, false
	}
	maxSnapshots := cmpOr(tb.Retention.MaxSnapshots, DefaultRetention.MaxSnapshots)
	// Two data files encoded once (2 rows, 1 row), written as each day's
	// file in turn: the test pays for commits, not for encoding.
	var bodies [2][]byte
	for i, rows := range []int{2, 1} {
		w.export(day1, int64(i+1), 1, rows)
		b, err := w.b.Get(w.ctx, layout.DataKey(prefix, "events", day1, 0, ".parquet"), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		bodies[i] = b
	}
	var maxEarly, maxLate int
	for g := int64(1); g <= gens; g++ {
		for i := range days {
			day := day1.AddDays(i)
			// Consecutive generations differ (1 row, 2 rows), so each
			// table commit commits; the folder's write is not the table's.
			body := bodies[g%2]
			d := Committed{Day: day, Generation: g, ManifestKey: layout.ManifestKey(prefix, "events", day),
				Files: []manifest.File{{Key: layout.DataKey(prefix, "events", day, 0, ".parquet"), Rows: 2 - g%2, Bytes: int64(len(body))}}}
			if err := w.b.Put(w.ctx, d.Files[0].Key, body, "application/vnd.apache.parquet"); err != nil {
				t.Fatal(err)
			}
			before := w.calls()
			if g > 1 && withdraw {
				mustWithdraw(t, tb, day, g)
			}
			mustAdd(t, tb, d)
			n := w.calls() - before
			if g == 1 && i < 20 {
				maxEarly = max(maxEarly, n)
			}
			if g == gens {
				maxLate = max(maxLate, n)
			}
		}
	}
	if l := w.faults.Count(buckettest.OpList); l != 1 {
		t.Fatalf("%d listings, want 1 (the first table commit's)", l)
	}
	tbl := w.load()
	body, err := w.b.Get(w.ctx, strings.TrimPrefix(tbl.MetadataLocation(), "s3://"+w.b.Name()+"/"), DefaultLimits.MetadataBytes)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := tbl.CurrentSnapshot().Manifests(w.fs())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d days × %d generations (withdrawals %v): requests per re-export in the first 20 days ≤ %d, in the last generation ≤ %d; "+
		"metadata file %d bytes, %d snapshots, %d manifests, %d listings",
		days, gens, withdraw, maxEarly, maxLate, len(body), len(tbl.Metadata().Snapshots()), len(ms), w.faults.Count(buckettest.OpList))
	if maxLate > 2*maxEarly+20 {
		t.Fatalf("a late commit made %d requests, an early one %d", maxLate, maxEarly)
	}
	if n := len(tbl.Metadata().Snapshots()); n > maxSnapshots {
		t.Fatalf("%d snapshots retained, want ≤ %d", n, maxSnapshots)
	}
	// The manifest lists of expired snapshots are gone, the retained ones' remain.
	lists, err := w.b.List(w.ctx, w.table().Location+"/"+MetadataDir+"/snap-", 100_000)
	if err != nil {
		t.Fatal(err)
	}
	if len(lists) != len(tbl.Metadata().Snapshots()) {
		t.Fatalf("%d manifest lists for %d snapshots", len(lists), len(tbl.Metadata().Snapshots()))
	}
	if len(ms) > 17 {
		t.Fatalf("%d manifests: merging did not bound them", len(ms))
	}
}

func (w *world) calls() int {
	n := 0
	for _, op := range []buckettest.Op{buckettest.OpPut, buckettest.OpGet, buckettest.OpHead, buckettest.OpDelete, buckettest.OpList, buckettest.OpDeleteObjects} {
		n += w.faults.Count(op)
	}
	return n
}

// TestSchemaVersionAddsColumns: a schema version that appends a column is
// an Iceberg schema update: the existing ids stay, the new column takes the
// next, older days read it as null and newer ones as written.
func TestSchemaVersionAddsColumns(t *testing.T) {
	w := newWorld(t, false)
	mustAdd(t, w.table(), w.export(day1, 1, 1, 40))
	v1 := w.load().Schema()
	w.ds.Version = 2
	w.ds.Columns = append(slices.Clone(w.ds.Columns), dataset.Column{Name: "channel", Type: dataset.Type{Kind: dataset.KindString},
		Nullable: true, Since: 2, Description: "Where the event came from."})
	mustAdd(t, w.table(), w.export(day2, 1, 1, 30))
	w.check(day1, day2)
	tbl := w.load()
	sc := tbl.Schema()
	for _, f := range v1.Fields() {
		if g, ok := sc.FindFieldByName(f.Name); !ok || g.ID != f.ID {
			t.Fatalf("column %s had id %d, now %+v", f.Name, f.ID, g)
		}
	}
	f, ok := sc.FindFieldByName("channel")
	if !ok || f.ID != len(v1.Fields())+1 || f.Required || f.Doc != "Where the event came from." {
		t.Fatalf("the appended column: %+v (found %v)", f, ok)
	}
	at, err := tbl.Scan().ToArrowTable(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	rr := array.NewTableReader(at, 1024)
	defer rr.Release()
	nulls, values := map[civil.Date]int{}, map[civil.Date]int{}
	for rr.Next() {
		rec := rr.RecordBatch()
		ts := rec.Column(2).(*array.Timestamp)
		ch := rec.Column(len(v1.Fields())).(*array.String)
		for i := range int(rec.NumRows()) {
			day := civil.Of(ts.Value(i).ToTime(arrow.Microsecond))
			if ch.IsNull(i) {
				nulls[day]++
			} else if ch.Value(i) == "gen-1" {
				values[day]++
			}
		}
	}
	if nulls[day1] != 40 || values[day2] != 30 || values[day1] != 0 || nulls[day2] != 0 {
		t.Fatalf("channel: nulls %v, values %v", nulls, values)
	}
}

// icebird reads the current snapshot with icebird, an independent
// JavaScript reader: per day, exactly the ids of the day's generation.
func (w *world) icebird() {
	w.t.Helper()
	// icebird reads without credentials: the test bucket lets anyone read.
	cfg, err := srv.Config(w.ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::` + w.b.Name() + `/*"}]}`
	if _, err := awsclient.NewS3(cfg).PutBucketPolicy(w.ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(w.b.Name()), Policy: &policy}); err != nil {
		w.t.Fatal(err)
	}
	rows, err := parquetreaders.ReadIcebird(srv.URL, "s3://"+w.b.Name()+"/"+w.table().Location, "event_id", "occurred_at")
	if err != nil {
		w.t.Fatal(err)
	}
	got := map[civil.Date][]string{}
	for _, r := range rows {
		got[civil.Of(r.Time())] = append(got[civil.Of(r.Time())], r.ID)
	}
	want := w.rows(w.load(), 0)
	if len(got) != len(want) {
		w.t.Fatalf("icebird reads days %v, iceberg-go %v", keys(got), keys(want))
	}
	for d, ids := range want {
		slices.Sort(got[d])
		if !slices.Equal(got[d], ids) || !slices.Equal(ids, w.ids[d]) {
			w.t.Fatalf("%s: icebird reads %d rows, iceberg-go %d, the generation has %d", d, len(got[d]), len(ids), len(w.ids[d]))
		}
	}
	w.t.Logf("icebird read %d rows of %d days", len(rows), len(got))
}

// TestZeroRowDayIsReplaced: a day delivered with one zero-row file (an
// empty day's valid empty file) is withdrawn and replaced like any other.
// Scan planning skips files whose record count is zero, so finding the
// day's files by a scan left the empty file in the table: the withdrawal
// missed it and the next generation, which reuses its name, was refused
// ("already referenced") on every retry. The chaos run found it.
func TestZeroRowDayIsReplaced(t *testing.T) {
	w := newWorld(t, true)
	tb := w.table()
	mustAdd(t, tb, w.export(day1, 1, 1, 0))
	mustAdd(t, tb, w.export(day2, 1, 1, 10))
	if files, err := tb.dayFiles(w.ctx, w.load(), day1); err != nil || len(files) != 1 || files[0].Count() != 0 {
		t.Fatalf("the empty day's files: %v, %v", files, err)
	}
	mustWithdraw(t, tb, day1, 2)
	if files, err := tb.dayFiles(w.ctx, w.load(), day1); err != nil || len(files) != 0 {
		t.Fatalf("after the withdrawal the table still holds %d files of the empty day (%v)", len(files), err)
	}
	mustAdd(t, tb, w.export(day1, 2, 1, 20))
	w.check(day1, day2)
	// And without a withdrawal: the new generation replaces the empty one.
	mustAdd(t, tb, w.export(day1, 3, 1, 0))
	mustAdd(t, tb, w.export(day1, 4, 1, 5))
	w.check(day1, day2)
}

// TestRetentionDropsWhatNoSnapshotNeeds: with a short retention, after
// every commit metadata/ holds exactly what the retained snapshots need
// (their manifest lists and manifests: none missing, none left over) and
// at most the kept metadata versions, and every retained snapshot's
// manifests read. Before, expired snapshots' manifests stayed forever.
// Every table file's name is one layout.LongestKey counts.
func TestRetentionDropsWhatNoSnapshotNeeds(t *testing.T) {
	w := newWorld(t, true)
	tb := w.table()
	tb.Retention = Retention{MaxAge: 365 * 24 * time.Hour, MaxSnapshots: 4}
	days := []civil.Date{day1, day2, day2.AddDays(1)}
	for n := range 30 {
		day, gen := days[n%len(days)], int64(n/len(days)+1)
		if n%2 == 1 {
			mustWithdraw(t, tb, day, gen)
		}
		mustAdd(t, tb, w.export(day, gen, 1+n%2, 10))
		tbl := w.load()
		fs := w.fs()
		need := map[string]bool{}
		for _, s := range tbl.Metadata().Snapshots() {
			need[s.ManifestList] = true
			paths, ok := manifestPaths(fs, &s)
			if !ok {
				t.Fatalf("commit %d: snapshot %d's manifest list %s is unreadable", n, s.SnapshotID, s.ManifestList)
			}
			for p := range paths {
				need[p] = true
			}
			ms, err := s.Manifests(fs)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms { // every retained snapshot's manifests read
				if _, err := m.FetchEntries(fs, false); err != nil {
					t.Fatalf("commit %d: snapshot %d: %v", n, s.SnapshotID, err)
				}
			}
		}
		objs, err := w.b.List(w.ctx, tb.Location+"/"+MetadataDir+"/", 100_000)
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		versions := 0
		for _, o := range objs {
			// Every table file's key is one layout.LongestKey counts.
			if name := o.Key[strings.LastIndexByte(o.Key, '/')+1:]; len(name) > layout.MaxTableFileNameLen || o.Key != layout.TableFileKey(prefix, "events", name) {
				t.Fatalf("table file %s: its name is %d bytes (layout counts %d), or it is not layout.TableFileKey's", o.Key, len(name), layout.MaxTableFileNameLen)
			}
			switch {
			case strings.HasSuffix(o.Key, ".avro"):
				have[uri(w.b, o.Key)] = true
				if !need[uri(w.b, o.Key)] {
					t.Fatalf("commit %d: %s is left, and no retained snapshot needs it", n, o.Key)
				}
			case strings.HasSuffix(o.Key, ".metadata.json"):
				versions++
			}
		}
		for p := range need {
			if !have[p] {
				t.Fatalf("commit %d: a retained snapshot needs %s, which is gone", n, p)
			}
		}
		if versions > keepMetadataVersions+1 {
			t.Fatalf("commit %d: %d metadata files, want at most %d", n, versions, keepMetadataVersions+1)
		}
	}
}

// TestDataFilesCarryColumnStatistics: each delivered data file carries the
// column statistics of its Parquet footer (value and null counts, lower
// and upper bounds), read by a ranged GET of the file's tail, so a filter
// on a value no file holds plans no file. Before, the table listed files
// with row counts only, and every scan read every file.
func TestDataFilesCarryColumnStatistics(t *testing.T) {
	w := newWorld(t, true)
	tb := w.table()
	gets := w.faults.Count(buckettest.OpGet)
	mustAdd(t, tb, w.export(day1, 1, 2, 50))
	tbl := w.load()
	files, err := LiveFiles(w.ctx, tbl)
	if err != nil || len(files) != 2 {
		t.Fatalf("%d files, %v", len(files), err)
	}
	start, end := day1.Start(time.UTC).UnixMicro(), day1.AddDays(1).Start(time.UTC).UnixMicro()
	for _, f := range files {
		lo, hi := f.LowerBoundValues()[3], f.UpperBoundValues()[3] // occurred_at
		if f.ValueCounts()[1] != 50 || f.NullValueCounts()[1] != 0 || len(lo) != 8 || len(hi) != 8 {
			t.Fatalf("%s: value counts %v, null counts %v, occurred_at bounds %x..%x", f.FilePath(), f.ValueCounts(), f.NullValueCounts(), lo, hi)
		}
		if l, h := int64(binary.LittleEndian.Uint64(lo)), int64(binary.LittleEndian.Uint64(hi)); l < start || h >= end || l > h {
			t.Fatalf("%s: occurred_at bounds %d..%d outside the day %d..%d", f.FilePath(), l, h, start, end)
		}
	}
	plan := func(id string) int {
		t.Helper()
		tasks, err := tbl.Scan(table.WithRowFilter(iceberg.EqualTo(iceberg.Reference("event_id"), id))).PlanFiles(w.ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(tasks)
	}
	if n := plan("zzz-no-such-event"); n != 0 {
		t.Fatalf("a filter no file's bounds admit plans %d files", n)
	}
	if n := plan(w.ids[day1][0]); n < 1 {
		t.Fatalf("a filter on an existing id plans %d files", n)
	}
	t.Logf("%d GETs for the table commit of 2 files (one footer read each, and the table's own)", w.faults.Count(buckettest.OpGet)-gets)
}
