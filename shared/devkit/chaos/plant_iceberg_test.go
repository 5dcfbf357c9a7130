package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/encode"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/icetable"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// TestPlantAfterTheNewestVersion: the planted metadata is the version after
// the table's newest one, whatever the version hint says, and it never
// replaces a metadata file. The hint is a shortcut (a reader probes past
// it): a commit whose hint write failed (an outage on that PUT) leaves it a
// version behind, and a plant written at hint+1 replaced the newest
// commit: the table commit of a day that a withdrawal had just taken out, so
// the day left the table while its _SUCCESS and its ledger row stood (a
// TestChaosSliced run, seed 12: "dt=2026-12-06 holds 0 rows in 0 files;
// its _manifest.json (generation 5) lists 2 rows in 1 files", first seen
// after the round whose plant read with daybook's properties).
func TestPlantAfterTheNewestVersion(t *testing.T) {
	ctx := t.Context()
	srv, err := motoserver.Start(ctx, filepath.Join(t.TempDir(), "moto.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	cfg, err := srv.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	client := awsclient.NewS3(cfg)
	name := "plant-newest"
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &name}); err != nil {
		t.Fatal(err)
	}
	cat, err := dataset.Example()
	if err != nil {
		t.Fatal(err)
	}
	ds, err := cat.Get("events")
	if err != nil {
		t.Fatal(err)
	}
	// The exporter's table writes go through faults; the plant, as the
	// driver's, reads and writes the bucket directly.
	faults := &buckettest.Faults{}
	store := bucket.New(faults.Wrap(client), name, bucket.Options{})
	const prefix = "daybook/acct_x"
	loc := tableLocation(prefix, ds.Name)
	tb := &icetable.Table{Store: store, Location: loc, Dataset: ds}
	day1, day2 := civil.MustParse("2026-12-05"), civil.MustParse("2026-12-06")
	add := func(day civil.Date, gen int64) icetable.Committed {
		t.Helper()
		d := writeDay(ctx, t, store, ds, prefix, day, gen)
		if _, err := tb.Add(ctx, d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	add(day1, 1) // v1 (the new table), v2
	add(day2, 4) // v3
	// The day's generation 5: the withdrawal at its Begin (v4), then its
	// table commit (v5), whose hint write fails.
	if _, err := tb.Withdraw(ctx, day2, 5); err != nil {
		t.Fatal(err)
	}
	hint := icetable.VersionHintKey(loc)
	puts := faults.Calls(buckettest.OpPut, hint)
	faults.Set(buckettest.Once(errors.New("injected: the version hint's PUT failed"), buckettest.Is(buckettest.OpPut, hint)), nil)
	want := add(day2, 5)
	if n := faults.Calls(buckettest.OpPut, hint) - puts; n != 1 {
		t.Fatalf("the table commit wrote the version hint %d times, want once (and failed)", n)
	}
	b, err := store.Get(ctx, hint, 64)
	if err != nil || string(b) != "4" {
		t.Fatalf("the version hint = %q (%v), want 4: one behind the newest commit", b, err)
	}

	p := &pipeline{s3: client}
	var trick plantTrick
	for _, tr := range plantTricks {
		if tr.name == "write.metadata.path elsewhere" {
			trick = tr
		}
	}
	c := canaries{base: store.URI(""), location: plantCanary + "/r1/v1/events"}
	n, err := p.tableVersion(ctx, name, loc)
	if err != nil {
		t.Fatal(err)
	}
	key, err := p.plantMetadata(ctx, name, loc, n, trick, c)
	if err != nil {
		t.Fatal(err)
	}
	if want := icetable.MetadataKey(loc, 6); key != want {
		t.Errorf("planted %s, want %s: the version after the newest", key, want)
	}
	tbl, err := icetable.Load(ctx, store, loc)
	if err != nil {
		t.Fatal(err)
	}
	days, err := icetable.DayFiles(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range days[day2] {
		got = append(got, fmt.Sprintf("%s %d rows", f.Key, f.Rows))
	}
	var exp []string
	for _, f := range want.Files {
		exp = append(exp, fmt.Sprintf("%s %d rows", f.Key, f.Rows))
	}
	slices.Sort(got)
	if !slices.Equal(got, exp) || len(days[day1]) != 1 {
		t.Errorf("after the plant at %s (the hint read %d), the table (%s) holds %s as %q, want %q as its generation 5 delivered it; %s as %d files, want 1",
			key, n, tbl.MetadataLocation(), day2, got, exp, day1, len(days[day1]))
	}

	// A plant never replaces a metadata file: one asked after a version
	// that is not the newest is refused, and the newest stays.
	before, err := store.Get(ctx, icetable.MetadataKey(loc, 6), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.plantMetadata(ctx, name, loc, 5, trick, c); err == nil {
		t.Error("a plant after v5, with v6 in place, was written")
	}
	if after, err := store.Get(ctx, icetable.MetadataKey(loc, 6), 1<<20); err != nil || !bytes.Equal(after, before) {
		t.Errorf("v6 changed under a refused plant (%v)", err)
	}
}

// writeDay writes generation gen of day as the folder protocol leaves it
// (one Parquet file of the dataset's rows) and returns its table commit.
func writeDay(ctx context.Context, t *testing.T, store *bucket.Bucket, ds dataset.Dataset, prefix string, day civil.Date, gen int64) icetable.Committed {
	t.Helper()
	const rows = 3
	g := datasettest.NewEventGen(uint64(gen)*1000+uint64(day.EpochDays()), day, rows*3)
	var buf bytes.Buffer
	enc, err := encode.New(fileformat.Parquet, &buf, ds, encode.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range rows {
		row := g.Next()
		for len(row) < len(ds.Columns) { // the dataset's newer columns
			row = append(row, fmt.Sprintf("gen-%d", gen))
		}
		if err := enc.Write(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	key := layout.DataKey(prefix, ds.Name, day, 0, ".parquet")
	if err := store.Put(ctx, key, buf.Bytes(), "application/vnd.apache.parquet"); err != nil {
		t.Fatal(err)
	}
	return icetable.Committed{Day: day, Generation: gen, Reason: "scheduled", RunID: fmt.Sprintf("run-%d", gen),
		ManifestKey: layout.ManifestKey(prefix, ds.Name, day), Files: []manifest.File{{Key: key, Rows: rows, Bytes: int64(buf.Len())}}}
}
