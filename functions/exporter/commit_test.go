package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/partition"
	"github.com/daybook-dev/daybook/shared/upload"
)

// The Committer's own tests run on the in-memory store; the exporter's
// tests run the same protocol on moto.

const commitPP = "acct/v1/events/dt=2026-03-05/"

// commitFixture is a Committer on a fresh in-memory bucket, seen through
// Faults, with every call recorded in order.
type commitFixture struct {
	store  *buckettest.Fake
	b      *bucket.Bucket
	faults *buckettest.Faults
	mu     sync.Mutex
	calls  []string
}

func newCommitFixture(t *testing.T) *commitFixture {
	f := &commitFixture{store: buckettest.NewFake("dest"), faults: &buckettest.Faults{}}
	f.b = bucket.New(f.faults.Wrap(f.store), "dest", bucket.Options{})
	return f
}

// record logs every call from now on, then runs then (if not nil) on it.
func (f *commitFixture) record(then buckettest.Hook) {
	f.faults.Set(func(c buckettest.Call) error {
		f.mu.Lock()
		switch c.Op {
		case buckettest.OpDeleteObjects:
			f.calls = append(f.calls, fmt.Sprintf("%s %s", c.Op, strings.Join(c.Keys, ",")))
		default:
			f.calls = append(f.calls, fmt.Sprintf("%s %s", c.Op, c.Key))
		}
		f.mu.Unlock()
		if then != nil {
			return then(c)
		}
		return nil
	}, nil)
}

func (f *commitFixture) committer() *Committer {
	at := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	return &Committer{Bucket: f.b, Partition: commitPP, RunID: "run_1", Now: func() time.Time { return at }}
}

// writeFile streams body into a data file of the generation and returns
// its manifest entry.
func writeFile(ctx context.Context, p *Pending, name, body string) (manifest.File, error) {
	w := p.NewDataFile(ctx, commitPP+name, upload.Options{ContentType: "application/vnd.apache.parquet"})
	if _, err := w.Write([]byte(body)); err != nil {
		return manifest.File{}, err
	}
	if err := w.Close(); err != nil {
		return manifest.File{}, err
	}
	r := w.Result()
	return manifest.File{Key: r.Key, Rows: 1, Bytes: r.Bytes, CRC32C: r.CRC32C, SHA256: r.SHA256}, nil
}

// generation is a generation of the fixture's partition (the example
// catalog's events, on an S3 bucket) claimed at claimed, as a run has it
// once placed: it notes a committed generation it finds in rec (nil:
// nowhere).
func (f *commitFixture) generation(t *testing.T, claimed int64, rec *noteRecorder) *generation {
	ds, err := datasettest.Example(t).Get("events")
	if err != nil {
		t.Fatal(err)
	}
	g := &generation{e: &Exporter{}, committer: f.committer(), target: target{
		Partition: Partition{Account: account.Account{Destination: account.Destination{Bucket: "dest"}},
			Dataset: ds, Day: civil.MustParse("2026-03-05"), Claim: ledger.Claim{Generation: claimed}},
		partPrefix: commitPP, bucket: f.b}}
	if rec != nil {
		g.rec = &recorder{ledger: rec}
	}
	return g
}

// commitManifest is the manifest of the fixture's partition as a run
// hands it to the commit, of files.
func commitManifest(files ...manifest.File) *manifest.Manifest {
	return &manifest.Manifest{FormatVersion: manifest.FormatVersion, RunID: "run_1", Day: "2026-03-05",
		Format: string(fileformat.Parquet), Compression: string(fileformat.Snappy), Files: files}
}

// scriptKeys are the keys of the load scripts g writes for m, sorted.
func scriptKeys(t *testing.T, g *generation, m *manifest.Manifest) []string {
	t.Helper()
	files, err := loadScripts(g.Dataset, m, g.Account.Destination, g.partPrefix)
	if err != nil || len(files) == 0 {
		t.Fatalf("load scripts: %d files, %v", len(files), err)
	}
	var keys []string
	for name := range files {
		keys = append(keys, g.partPrefix+layout.LoadDir+"/"+name)
	}
	slices.Sort(keys)
	return keys
}

// TestCommitOrder pins the protocol's calls in order: the old _SUCCESS is
// read and removed, the data files are written, everything else under the
// partition is deleted and every incomplete upload under it aborted
// (nothing outside it), the manifest and the scripts
// (by name) are written, and _SUCCESS last, naming the manifest's bytes.
func TestCommitOrder(t *testing.T) {
	f := newCommitFixture(t)
	ctx := t.Context()
	for _, k := range []string{"part-00000.parquet", "part-00001.parquet", "part-00002.parquet", "_manifest.json", "_load/old.sql"} {
		if err := f.b.Put(ctx, commitPP+k, []byte("generation 1"), ""); err != nil {
			t.Fatal(err)
		}
	}
	const nextDay = "acct/v1/events/dt=2026-03-06/part-00000.parquet"
	if err := f.b.Put(ctx, nextDay, []byte("next day"), ""); err != nil {
		t.Fatal(err)
	}
	// Uploads nobody will finish: a killed run's under the partition, and
	// one under the next day's, which is not this commit's to abort.
	for _, k := range []string{commitPP + "part-00003.parquet", nextDay} {
		if _, err := f.store.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("dest"), Key: aws.String(k)}); err != nil {
			t.Fatal(err)
		}
	}
	old := manifest.NewSuccess(1, "run_0", commitPP+layout.ManifestName, []byte("generation 1"), time.Time{})
	if err := f.b.Put(ctx, commitPP+layout.SuccessName, old.Encode(), "application/json"); err != nil {
		t.Fatal(err)
	}
	f.record(nil)
	g := f.generation(t, 2, nil)
	p, err := g.begun(ctx)
	if err != nil || p.Generation() != 2 {
		t.Fatalf("Begin = generation %v, %v", p, err)
	}
	var files []manifest.File
	for i, body := range []string{"a", "b"} {
		file, err := writeFile(ctx, p, fmt.Sprintf("part-%05d.parquet", i), body)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, file)
	}
	m := commitManifest(files...)
	key, err := g.replace(ctx, m)
	if err != nil || key != commitPP+layout.ManifestName {
		t.Fatalf("Commit = %q, %v", key, err)
	}
	want := []string{
		"GetObject " + commitPP + "_SUCCESS",
		"DeleteObject " + commitPP + "_SUCCESS",
		"PutObject " + commitPP + "part-00000.parquet",
		"PutObject " + commitPP + "part-00001.parquet",
		"ListObjectsV2 " + commitPP,
		"DeleteObjects " + commitPP + "_load/old.sql," + commitPP + "_manifest.json," + commitPP + "part-00002.parquet",
		"ListMultipartUploads " + commitPP,
		"AbortMultipartUpload " + commitPP + "part-00003.parquet",
		// By each data key the generation may have started (for stores that
		// list uploads only by key), concurrently: sorted below.
		"ListMultipartUploads " + commitPP + "part-00000.parquet",
		"ListMultipartUploads " + commitPP + "part-00001.parquet",
		"ListMultipartUploads " + commitPP + "part-00002.parquet",
		"PutObject " + commitPP + "_manifest.json",
	}
	// The load scripts, rendered from the committed manifest, by name.
	for _, k := range scriptKeys(t, g, m) {
		want = append(want, "PutObject "+k)
	}
	want = append(want, "PutObject "+commitPP+"_SUCCESS")
	byKey := slices.IndexFunc(f.calls, func(c string) bool { return strings.HasPrefix(c, "ListMultipartUploads "+commitPP+"part-") })
	if byKey >= 0 && byKey+3 <= len(f.calls) {
		slices.Sort(f.calls[byKey : byKey+3])
	}
	if strings.Join(f.calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(f.calls, "\n"), strings.Join(want, "\n"))
	}
	// Commit completed the manifest before writing it.
	if m.Generation != 2 || m.Totals != (manifest.Totals{Files: 2, Rows: 2, Bytes: 2}) || !m.FinishedAt.Equal(time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("manifest generation %d totals %+v finished %v", m.Generation, m.Totals, m.FinishedAt)
	}
	body, err := f.b.Get(ctx, commitPP+layout.ManifestName, testReadLimit)
	if err != nil {
		t.Fatal(err)
	}
	if stored, err := manifest.Decode(body); err != nil || stored.Generation != 2 || len(stored.Files) != 2 {
		t.Errorf("stored manifest %+v, %v", stored, err)
	}
	marker, err := f.b.Get(ctx, commitPP+layout.SuccessName, testReadLimit)
	if err != nil {
		t.Fatal(err)
	}
	succ, err := manifest.DecodeSuccess(marker)
	if err != nil || succ.Generation != 2 || !succ.Matches(body) || succ.RunID != "run_1" || succ.ManifestKey != commitPP+layout.ManifestName {
		t.Errorf("_SUCCESS %+v (%v)", succ, err)
	}
	if s, _ := f.b.Get(ctx, commitPP+"_load/duckdb.sql", testReadLimit); !regexp.MustCompile(`generation:\s+2\n`).Match(s) || !strings.Contains(string(s), commitPP+"part-00001.parquet") {
		t.Errorf("duckdb.sql:\n%s\nwant it rendered from the committed manifest (generation 2, its files)", s)
	}
	if open, err := f.store.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("dest")}); err != nil ||
		len(open.Uploads) != 1 || aws.ToString(open.Uploads[0].Key) != nextDay {
		t.Errorf("open uploads after the commit: %+v (%v), want only the next day's", open, err)
	}
	if _, err := f.b.Get(ctx, nextDay, testReadLimit); err != nil {
		t.Errorf("an object outside the partition: %v", err)
	}
}

// TestBeginGeneration: the generation only increases, and a bucket ahead of
// the ledger is noted before the old _SUCCESS is removed.
func TestBeginGeneration(t *testing.T) {
	for _, tc := range []struct {
		name     string
		marker   string // the old _SUCCESS ("" : none)
		claimed  int64
		want     int64
		noted    []int64
		noteFail bool
		wantErr  string
	}{
		{"no _SUCCESS: the claim's", "", 4, 4, nil, false, ""},
		{"older _SUCCESS: the claim's", `{"generation":2}`, 4, 4, nil, false, ""},
		{"_SUCCESS of the claimed generation: one more, noted", `{"generation":4}`, 4, 5, []int64{4}, false, ""},
		{"newer _SUCCESS: one more, noted", `{"generation":7}`, 4, 8, []int64{7}, false, ""},
		{"unreadable _SUCCESS: the claim's", `not json`, 4, 4, nil, false, ""},
		{"the note fails: _SUCCESS stays", `{"generation":4}`, 4, 0, []int64{4}, true, "note committed generation 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCommitFixture(t)
			ctx := t.Context()
			if tc.marker != "" {
				if err := f.b.Put(ctx, commitPP+layout.SuccessName, []byte(tc.marker), "application/json"); err != nil {
					t.Fatal(err)
				}
			}
			note := &noteRecorder{fail: tc.noteFail}
			p, err := f.generation(t, tc.claimed, note).begun(ctx)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, errInjected) {
					t.Fatalf("Begin = %v, want %q", err, tc.wantErr)
				}
				if _, err := f.b.Get(ctx, commitPP+layout.SuccessName, testReadLimit); err != nil {
					t.Errorf("the old _SUCCESS was removed before the note: %v", err)
				}
			} else {
				if err != nil || p.Generation() != tc.want {
					t.Fatalf("Begin = %v, %v; want generation %d", p, err, tc.want)
				}
				if _, err := f.b.Get(ctx, commitPP+layout.SuccessName, testReadLimit); !bucket.IsNotFound(err) {
					t.Errorf("old _SUCCESS after Begin: %v", err)
				}
			}
			if fmt.Sprint(note.noted) != fmt.Sprint(tc.noted) {
				t.Errorf("noted %v, want %v", note.noted, tc.noted)
			}
		})
	}
}

// TestCommitFailures: a failure at any step stops the protocol at that
// call and leaves no _SUCCESS.
func TestCommitFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fail    func(buckettest.Call) bool
		wantErr string
		last    string // the failed call, the last one made
	}{
		{"reading the old _SUCCESS", func(c buckettest.Call) bool { return c.Op == buckettest.OpGet },
			"read old _SUCCESS: get s3://dest/" + commitPP + "_SUCCESS", "GetObject " + commitPP + "_SUCCESS"},
		{"removing the old _SUCCESS", func(c buckettest.Call) bool { return c.Op == buckettest.OpDelete },
			"remove old _SUCCESS: delete s3://dest/" + commitPP + "_SUCCESS", "DeleteObject " + commitPP + "_SUCCESS"},
		{"a data file", func(c buckettest.Call) bool { return c.Key == commitPP+"part-00000.parquet" },
			"put s3://dest/" + commitPP + "part-00000.parquet", "PutObject " + commitPP + "part-00000.parquet"},
		{"listing stale objects", func(c buckettest.Call) bool { return c.Op == buckettest.OpList },
			"list s3://dest/" + commitPP, "ListObjectsV2 " + commitPP},
		{"deleting stale objects", func(c buckettest.Call) bool { return c.Op == buckettest.OpDeleteObjects },
			"delete stale objects under s3://dest/" + commitPP, "DeleteObjects " + commitPP + "part-00009.parquet"},
		{"the manifest", func(c buckettest.Call) bool { return c.Key == commitPP+layout.ManifestName },
			"write manifest: put s3://dest/" + commitPP + "_manifest.json", "PutObject " + commitPP + "_manifest.json"},
		{"a load script", func(c buckettest.Call) bool { return c.Key == commitPP+"_load/duckdb.sql" },
			"write load script duckdb.sql: put s3://dest/" + commitPP + "_load/duckdb.sql", "PutObject " + commitPP + "_load/duckdb.sql"},
		{"_SUCCESS", func(c buckettest.Call) bool { return c.Op == buckettest.OpPut && c.Key == commitPP+layout.SuccessName },
			"write _SUCCESS: put s3://dest/" + commitPP + "_SUCCESS", "PutObject " + commitPP + "_SUCCESS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCommitFixture(t)
			ctx := t.Context()
			if err := f.b.Put(ctx, commitPP+"part-00009.parquet", []byte("stale"), ""); err != nil {
				t.Fatal(err)
			}
			f.record(buckettest.Once(errInjected, tc.fail))
			err := func() error {
				g := f.generation(t, 1, nil)
				p, err := g.begun(ctx)
				if err != nil {
					return err
				}
				defer p.Abort(ctx)
				w := p.NewDataFile(ctx, commitPP+"part-00000.parquet", upload.Options{})
				if _, err := w.Write([]byte("rows")); err != nil {
					return err
				}
				if err := w.Close(); err != nil {
					return err
				}
				r := w.Result()
				_, err = g.replace(ctx, commitManifest(manifest.File{Key: r.Key, Bytes: r.Bytes}))
				return err
			}()
			if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if last := f.calls[len(f.calls)-1]; last != tc.last {
				t.Errorf("last call %q, want the failed %q; calls:\n%s", last, tc.last, strings.Join(f.calls, "\n"))
			}
			if _, err := f.b.Get(ctx, commitPP+layout.SuccessName, testReadLimit); !bucket.IsNotFound(err) {
				t.Errorf("_SUCCESS after a failure: %v", err)
			}
		})
	}
}

// TestSeveralWriters: data files written concurrently by several writers
// are committed together by one Commit.
func TestSeveralWriters(t *testing.T) {
	f := newCommitFixture(t)
	ctx := t.Context()
	g := f.generation(t, 1, nil)
	p, err := g.begun(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files := make([]manifest.File, 4)
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i := range files {
		wg.Go(func() {
			files[i], errs[i] = writeFile(ctx, p, fmt.Sprintf("part-%05d.parquet", i), fmt.Sprint("slice ", i))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	m := commitManifest(files...)
	if _, err := g.replace(ctx, m); err != nil {
		t.Fatal(err)
	}
	objs, err := f.b.List(ctx, commitPP, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, strings.TrimPrefix(o.Key, commitPP))
	}
	want := []string{"_SUCCESS", "_manifest.json", "part-00000.parquet", "part-00001.parquet", "part-00002.parquet", "part-00003.parquet"}
	for _, k := range scriptKeys(t, g, m) {
		want = append(want, strings.TrimPrefix(k, commitPP))
	}
	if slices.Sort(want); !slices.Equal(got, want) {
		t.Errorf("partition %v, want %s", got, want)
	}
	out, err := f.store.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("dest"), Key: aws.String(commitPP + "part-00002.parquet")})
	if err != nil {
		t.Fatal(err)
	}
	out.Body.Close()
	if g, r := out.Metadata["daybook-generation"], out.Metadata["daybook-run-id"]; g != "1" || r != "run_1" || aws.ToString(out.ContentType) != "application/vnd.apache.parquet" {
		t.Errorf("data file metadata %v, content type %q", out.Metadata, aws.ToString(out.ContentType))
	}
}

// TestOpenFileIsNotCommitted: Commit refuses while a data file is still
// being written, and Abort aborts its multipart upload.
func TestOpenFileIsNotCommitted(t *testing.T) {
	f := newCommitFixture(t)
	ctx := t.Context()
	g := f.generation(t, 1, nil)
	p, err := g.begun(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done, err := writeFile(ctx, p, "part-00000.parquet", "closed")
	if err != nil {
		t.Fatal(err)
	}
	w := p.NewDataFile(ctx, commitPP+"part-00001.parquet", upload.Options{PartSize: upload.MinPartSize})
	if _, err := w.Write(make([]byte, upload.MinPartSize+1)); err != nil { // starts a multipart upload
		t.Fatal(err)
	}
	if _, err := g.replace(ctx, commitManifest(done)); !errors.Is(err, errFileOpen) {
		t.Fatalf("Commit with a file open = %v, want errFileOpen", err)
	}
	p.Abort(ctx)
	out, err := f.store.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("dest")})
	if err != nil || len(out.Uploads) != 0 {
		t.Fatalf("uploads after Abort: %+v, %v", out.Uploads, err)
	}
	if _, err := f.b.Get(ctx, commitPP+layout.SuccessName, testReadLimit); !bucket.IsNotFound(err) {
		t.Errorf("_SUCCESS after a refused commit: %v", err)
	}
	if _, err := f.b.Get(ctx, commitPP+"part-00000.parquet", testReadLimit); err != nil {
		t.Errorf("a closed file stays until a later commit: %v", err)
	}
}

// noteRecorder is a ledger that records the generations noted committed
// (LedgerAPI.NoteCommitted), and fails with errInjected when fail is set;
// it has nothing else.
type noteRecorder struct {
	LedgerAPI
	fail  bool
	noted []int64
}

func (n *noteRecorder) NoteCommitted(_ context.Context, _ partition.Key, _ string, g int64) error {
	n.noted = append(n.noted, g)
	if n.fail {
		return errInjected
	}
	return nil
}

// writeDay writes p's day with exp as a run does once its account is
// read (place, write), recording nothing in a ledger.
func writeDay(ctx context.Context, exp *Exporter, p Partition, log *slog.Logger) (*Written, error) {
	g := exp.generationOf(p, log)
	if err := g.place(ctx); err != nil {
		return nil, err
	}
	return g.write(ctx)
}
