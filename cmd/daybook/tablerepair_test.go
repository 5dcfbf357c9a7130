package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/encode"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/icetable"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/partition"
)

// commitDay writes generation gen of a day of ds for accountID as the
// exporter does (one Parquet file, _manifest.json, _SUCCESS) and returns
// its delivery.
func commitDay(t *testing.T, b *bucket.Bucket, prefix, accountID string, ds dataset.Dataset, day civil.Date, gen int64, rows int) icetable.Committed {
	t.Helper()
	ctx := t.Context()
	var buf bytes.Buffer
	enc, err := encode.New(fileformat.Parquet, &buf, ds, encode.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range datasettest.Varied(ds, rows) {
		if err := enc.Write(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	key := layout.DataKey(prefix, ds.Name, day, 0, ".parquet")
	if err := b.Put(ctx, key, buf.Bytes(), fileformat.Parquet.ContentType()); err != nil {
		t.Fatal(err)
	}
	m := &manifest.Manifest{FormatVersion: manifest.FormatVersion, Contract: layout.Version, AccountID: accountID, Dataset: ds.Name,
		SchemaVersion: ds.Version, Day: day.String(), Partition: ds.Partition, Mode: ds.Mode, Read: ds.Read, Generation: gen,
		RunID: "run", Reason: "scheduled", Format: "parquet", Schema: manifest.SchemaOf(ds),
		Files: []manifest.File{{Key: key, Rows: int64(rows), Bytes: int64(buf.Len())}}}
	m.Sum()
	body, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	mkey := layout.ManifestKey(prefix, ds.Name, day)
	if err := b.Put(ctx, mkey, body, "application/json"); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, layout.SuccessKey(prefix, ds.Name, day), manifest.NewSuccess(gen, "run", mkey, body, time.Unix(0, 0)).Encode(), ""); err != nil {
		t.Fatal(err)
	}
	return icetable.Committed{Day: day, Generation: gen, Reason: "scheduled", RunID: "run", ManifestKey: mkey, Files: m.Files}
}

// newIcebergEvents is a new account of the deployed stack that keeps an
// Iceberg table in daybook-exports-clitest: the account, its rendered
// prefix, the events dataset, the bucket and the events table.
func newIcebergEvents(t *testing.T, s stack) (account.Account, string, dataset.Dataset, *bucket.Bucket, *icetable.Table) {
	t.Helper()
	acct := s.newAccount(t, map[string]any{"destination": map[string]any{"bucket": "daybook-exports-clitest", "table_format": "iceberg"}})
	prefix, err := acct.Prefix("clitest")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := datasettest.Example(t).Get("events")
	if err != nil {
		t.Fatal(err)
	}
	b := bucket.New(awsclient.NewS3(s.cfg), "daybook-exports-clitest", bucket.Options{})
	return acct, prefix, ds, b, &icetable.Table{Store: b, Location: strings.TrimSuffix(layout.DatasetPrefix(prefix, "events"), "/"), Dataset: ds}
}

// TestTableRepairAsPrinted: a table whose newest metadata file is empty.
// Three days are committed; the last two were delivered while the table
// was broken, and their rows carry the table error with the repair
// command. That command, run as the error prints it, says what is wrong
// and what it would write and writes nothing; with --yes it writes the
// next version (in the table's metadata folder only), the table then holds
// every committed day, and the table errors are cleared; run again, it
// finds nothing to do.
func TestTableRepairAsPrinted(t *testing.T) {
	s := deployed(t)
	acct, prefix, ds, b, tb := newIcebergEvents(t, s)
	ctx := context.Background()
	days := []civil.Date{civil.MustParse("2026-11-20"), civil.MustParse("2026-11-21"), civil.MustParse("2026-11-22")}
	l := s.ledgerAt(t, testNow, 6)
	if _, err := l.Schedule().Materialize(ctx, acct.ID, "events", days[0], days[2]); err != nil {
		t.Fatal(err)
	}
	broken := icetable.MetadataKey(tb.Location, 2)
	tableError := string(manifest.CodeTableBroken) + ": table object " + broken + ": parse table metadata v2: unexpected end of JSON input; " +
		"the day's files are delivered; repair the table: " + icetable.RepairCommand(acct.ID, "events")
	for i, d := range days {
		del := commitDay(t, b, prefix, acct.ID, ds, d, 1, 10+i)
		res := ledger.Result{Rows: int64(10 + i), Files: 1, ManifestKey: del.ManifestKey, Generation: 1}
		if i == 0 {
			if _, err := tb.Add(ctx, del); err != nil {
				t.Fatal(err)
			}
			if err := b.Put(ctx, broken, nil, "application/json"); err != nil {
				t.Fatal(err)
			}
		} else {
			res.TableError = tableError
		}
		k := partition.Key{AccountID: acct.ID, Dataset: "events", Day: d}
		c, err := l.Partitions().Claim(ctx, k, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Partitions().Complete(ctx, k, c.Token, res); err != nil {
			t.Fatal(err)
		}
	}
	// Keys a load does not take for versions, planted in the metadata
	// folder: the repair writes past the newest version a load finds (v2),
	// not past these.
	for _, k := range []string{"v9999999999.metadata.json", "v01.metadata.json"} {
		if err := b.Put(ctx, tb.Location+"/"+icetable.MetadataDir+"/"+k, []byte("{}"), "application/json"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := icetable.Load(ctx, b, tb.Location); !errors.Is(err, icetable.ErrBroken) {
		t.Fatalf("the planted table: %v", err)
	}
	listing := func() []string {
		objs, err := b.List(ctx, strings.TrimSuffix(prefix, "/")+"/", 100_000)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, o := range objs {
			body, err := b.Get(ctx, o.Key, 16<<20)
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, fmt.Sprintf("%s %x", o.Key, sha256.Sum256(body)))
		}
		return keys
	}

	// The command as the table error prints it.
	printed := tableError[strings.Index(tableError, "daybook table repair"):]
	args := strings.Fields(printed)[1:]
	a, _, _ := testApp(t)
	before := listing()
	r := s.run(t, a, args...)
	if r.code != 0 || !strings.Contains(r.stdout, "broken: table object "+broken) || !strings.Contains(r.stdout, "plan: write "+icetable.MetadataKey(tb.Location, 3)+", a new table of the 3 committed days") ||
		!strings.Contains(r.stdout, "2 partitions carry a table error") || !strings.Contains(r.stdout, "dry run: nothing written") {
		t.Fatalf("%q: exit %d\n%s%s", printed, r.code, r.stdout, r.stderr)
	}
	t.Logf("%s:\n%s", printed, r.stdout)
	if after := listing(); !slices.Equal(before, after) {
		t.Fatalf("the dry run changed the bucket:\n%v\n%v", before, after)
	}
	r = s.run(t, a, append(args, "--yes")...)
	t.Logf("--yes:\n%s", r.stdout)
	if r.code != 0 || !strings.Contains(r.stdout, "repaired: s3://daybook-exports-clitest/"+icetable.MetadataKey(tb.Location, 3)+" holds 3 days") ||
		!strings.Contains(r.stdout, "table errors cleared: 2 of 2") {
		t.Fatalf("--yes: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, k := range listing() {
		if !slices.Contains(before, k) && !strings.HasPrefix(k, tb.Location+"/"+icetable.MetadataDir+"/") {
			t.Errorf("the repair wrote %s, outside the table's metadata folder", k)
		}
	}
	tbl, err := icetable.Load(ctx, b, tb.Location)
	if err != nil {
		t.Fatal(err)
	}
	got, err := icetable.DayFiles(ctx, tbl)
	if err != nil || len(got) != 3 {
		t.Fatalf("the repaired table holds %v (%v)", got, err)
	}
	for i, d := range days {
		if fs := got[d]; len(fs) != 1 || fs[0].Rows != int64(10+i) {
			t.Errorf("%s: the table holds %+v", d, fs)
		}
		row, err := l.Partitions().Get(ctx, partition.Key{AccountID: acct.ID, Dataset: "events", Day: d})
		if err != nil || row.TableError != "" {
			t.Errorf("%s: the row's table error %q (%v)", d, row.TableError, err)
		}
	}
	if _, err := s3Get(ctx, s, broken); err != nil {
		t.Errorf("the broken metadata file: %v; want it left in place", err)
	}
	r = s.run(t, a, append(args, "--yes")...)
	if r.code != 0 || !strings.Contains(r.stdout, "reads fine") || !strings.Contains(r.stdout, "plan: nothing to write") {
		t.Fatalf("again: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A dataset the account does not keep, or an account without a table,
	// is refused with its reason.
	if r := s.run(t, a, "table", "repair", "--account", acct.ID, "--dataset", "profiles"); r.code == 0 || !strings.Contains(r.stderr, "does not export profiles") {
		t.Errorf("another dataset: exit %d\n%s", r.code, r.stderr)
	}
	plain := s.newAccount(t, nil)
	if r := s.run(t, a, "table", "repair", "--account", plain.ID, "--dataset", "events"); r.code == 0 || !strings.Contains(r.stderr, "keeps no Iceberg table") {
		t.Errorf("an account without a table: exit %d\n%s", r.code, r.stderr)
	}
}

func s3Get(ctx context.Context, s stack, key string) (*s3.GetObjectOutput, error) {
	bkt := "daybook-exports-clitest"
	return awsclient.NewS3(s.cfg).GetObject(ctx, &s3.GetObjectInput{Bucket: &bkt, Key: &key})
}

// TestAccountTestChecksConditionalWrites: for an account that keeps an
// Iceberg table, `account test` also shows that the store refuses a write
// with If-None-Match: * over an existing object (the table's commit
// point), and leaves nothing behind; an account without a table is not
// asked. Before, no account was ever checked for it (a store that ignores
// the header silently drops a day from the table); the store that ignores
// it is shared/destination's TestConditionalWrite.
func TestAccountTestChecksConditionalWrites(t *testing.T) {
	s := deployed(t)
	a, _, _ := testApp(t)
	ice := s.newAccount(t, map[string]any{"destination": map[string]any{"bucket": "daybook-exports-clitest", "table_format": "iceberg"}})
	r := s.run(t, a, "account", "test", ice.ID)
	if r.code != 0 || !strings.Contains(r.stdout, "refuse a conditional write over an existing object (If-None-Match: *)") {
		t.Fatalf("account test of an Iceberg account: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	prefix, err := ice.Prefix("clitest")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range s.objects(t, "daybook-exports-clitest") {
		if strings.HasPrefix(k, prefix+"/") {
			t.Errorf("account test left %s behind", k)
		}
	}
	plain := s.newAccount(t, nil)
	if r := s.run(t, a, "account", "test", plain.ID); r.code != 0 || strings.Contains(r.stdout, "If-None-Match") {
		t.Errorf("account test of an account without a table: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestTableRepairHoldsEveryStandingGeneration: the repair rebuilds the
// table from every day whose committed generation stands in the bucket,
// whatever the day's state, and clears the table errors it settles. Five
// days were delivered while the table was broken (each row carries the
// table error of its generation 1); then a re-export of one failed before
// it began its generation (failed, generation 1 still committed), one was
// requeued (queued), one was claimed and has not begun (running), and one
// began its generation (its _SUCCESS removed) and failed. The files of the
// first four are delivered, so the rebuilt table holds them and their
// table errors go; the last day has no committed generation in the bucket,
// so the table holds nothing of it, and its table error (of a generation
// no longer delivered) goes too. Before, the repair took completed days
// only: the failed, queued and running days' delivered files were left out
// of the table and their rows kept a table error although the table read
// fine (the fault run's "records a table error, and the table reads").
func TestTableRepairHoldsEveryStandingGeneration(t *testing.T) {
	s := deployed(t)
	acct, prefix, ds, b, tb := newIcebergEvents(t, s)
	ctx := context.Background()
	failed, queued, running, begun, done := civil.MustParse("2026-11-20"), civil.MustParse("2026-11-21"), civil.MustParse("2026-11-22"),
		civil.MustParse("2026-11-23"), civil.MustParse("2026-11-24")
	days := []civil.Date{failed, queued, running, begun, done}
	l := s.ledgerAt(t, testNow, 6)
	if _, err := l.Schedule().Materialize(ctx, acct.ID, "events", days[0], days[len(days)-1]); err != nil {
		t.Fatal(err)
	}
	// A table with one snapshot, then an empty newest metadata file.
	first := commitDay(t, b, prefix, acct.ID, ds, civil.MustParse("2026-11-19"), 1, 5)
	if _, err := tb.Add(ctx, first); err != nil {
		t.Fatal(err)
	}
	broken := icetable.MetadataKey(tb.Location, 2)
	if err := b.Put(ctx, broken, nil, "application/json"); err != nil {
		t.Fatal(err)
	}
	tableError := string(manifest.CodeTableBroken) + ": table object " + broken + ": parse table metadata v2: unexpected end of JSON input; " +
		"the day's files are delivered; repair the table: " + icetable.RepairCommand(acct.ID, "events")
	key := func(d civil.Date) partition.Key { return partition.Key{AccountID: acct.ID, Dataset: "events", Day: d} }
	for i, d := range days {
		del := commitDay(t, b, prefix, acct.ID, ds, d, 1, 10+i)
		c, err := l.Partitions().Claim(ctx, key(d), "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Partitions().Complete(ctx, key(d), c.Token, ledger.Result{Rows: int64(10 + i), Files: 1, ManifestKey: del.ManifestKey, Generation: 1, TableError: tableError}); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []civil.Date{failed, begun} {
		c, err := l.Partitions().ClaimManual(ctx, key(d), ledger.ManualRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if d == begun { // the run's Begin removes the old _SUCCESS
			if err := b.Delete(ctx, layout.SuccessKey(prefix, "events", d)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.Partitions().Fail(ctx, key(d), c.Token, errors.New("source unreachable")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Partitions().Requeue(ctx, ledger.RequeueRange{AccountID: acct.ID, Dataset: "events", From: queued, To: queued, Reason: partition.ReasonManual}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().ClaimManual(ctx, key(running), ledger.ManualRequest{}); err != nil {
		t.Fatal(err)
	}
	for d, want := range map[civil.Date]ledger.State{failed: ledger.StateFailed, queued: ledger.StateQueued, running: ledger.StateRunning,
		begun: ledger.StateFailed, done: ledger.StateCompleted} {
		if row, err := l.Partitions().Get(ctx, key(d)); err != nil || row.State != want || row.Generation != 1 || row.TableError == "" {
			t.Fatalf("%s: %+v (%v); want %s at generation 1 with its table error", d, row, err, want)
		}
	}

	a, _, _ := testApp(t)
	args := []string{"table", "repair", "--account", acct.ID, "--dataset", "events"}
	r := s.run(t, a, args...)
	t.Logf("dry run:\n%s", r.stdout)
	if r.code != 0 || !strings.Contains(r.stdout, "plan: write "+icetable.MetadataKey(tb.Location, 3)+", a new table of the 4 committed days") ||
		!strings.Contains(r.stdout, "left out: "+begun.String()+": generation 1 is not committed in the bucket: no "+layout.SuccessKey(prefix, "events", begun)) ||
		!strings.Contains(r.stdout, "5 partitions carry a table error") {
		t.Errorf("dry run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = s.run(t, a, append(args, "--yes")...)
	t.Logf("--yes:\n%s", r.stdout)
	if r.code != 0 || !strings.Contains(r.stdout, "holds 4 days") || !strings.Contains(r.stdout, "table errors cleared: 5 of 5") {
		t.Fatalf("--yes: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	tbl, err := icetable.Load(ctx, b, tb.Location)
	if err != nil {
		t.Fatal(err)
	}
	got, err := icetable.DayFiles(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range days {
		want := 1
		if d == begun {
			want = 0
		}
		if fs := got[d]; len(fs) != want || (want == 1 && fs[0].Rows != int64(10+i)) {
			t.Errorf("%s: the repaired table holds %+v; want %d file of %d rows", d, fs, want, 10+i)
		}
		if row, err := l.Partitions().Get(ctx, key(d)); err != nil || row.TableError != "" {
			t.Errorf("%s (%s): the row's table error %q (%v); want it cleared", d, row.State, row.TableError, err)
		}
	}
	if len(got) != 4 {
		t.Errorf("the repaired table holds %d days; want 4", len(got))
	}
}
