package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/bucketdocs"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// testReadLimit is the most bytes a test reads back of an object it wrote.
const testReadLimit = 64 << 20

// TestBeginRefusesAnOversizedSuccess: the partition's old _SUCCESS is in
// the tenant's bucket, so it is read with manifest.MaxSuccessBytes: a
// planted 64 MiB one (valid JSON, padded) fails Begin with an error naming
// the key and the limit, allocates nothing near its size, and is left in
// place (nothing is noted, nothing deleted).
func TestBeginRefusesAnOversizedSuccess(t *testing.T) {
	const size = 64 << 20
	f := newCommitFixture(t)
	ctx := t.Context()
	planted := append([]byte(`{"generation":7}`), bytes.Repeat([]byte(" "), size)...)
	if err := f.b.Put(ctx, commitPP+layout.SuccessName, planted, "application/json"); err != nil {
		t.Fatal(err)
	}
	planted = nil
	rec := &noteRecorder{}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := f.generation(t, 4, rec).begun(ctx)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, bucket.ErrTooLarge) {
		t.Fatalf("Begin = %v, want ErrTooLarge", err)
	}
	for _, want := range []string{"s3://dest/" + commitPP + layout.SuccessName, "8192"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// The in-memory store copies the object for the body it returns; the
	// read must add no more than about the limit to that.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size+1<<20 {
		t.Errorf("Begin allocated %d bytes reading a %d-byte _SUCCESS", alloc, size)
	}
	if rec.noted != nil {
		t.Errorf("noted %v from an unread marker", rec.noted)
	}
	if _, err := f.b.Head(ctx, commitPP+layout.SuccessName); err != nil {
		t.Errorf("the marker was removed: %v", err)
	}
}

// TestPlantedGenerationIsRefused: a _SUCCESS in the tenant's bucket that
// commits a generation far above the ledger's (2^63-2, one short of the
// largest int64) is not noted and not numbered above: the run fails with
// ledger.ErrBucketAhead naming the marker and what to do, the marker and
// the ledger's numbers are left as they were, and once an operator deletes
// the marker the retry commits the next generation of the ledger.
func TestPlantedGenerationIsRefused(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.insert("events", genRows("events", testDay, 3)...)
	if r := e.export("events", testDay); r.State != ledger.StateCompleted || r.Generation != 1 {
		t.Fatalf("first export: %+v", r)
	}
	pp := e.partPrefix("events", testDay)
	key := pp + layout.SuccessName
	planted := manifest.NewSuccess(math.MaxInt64-1, "planted", pp+layout.ManifestName, []byte("x"), e.clk.Now()).Encode()
	if _, err := e.s3.PutObject(e.ctx, &s3.PutObjectInput{Bucket: &e.acct.Destination.Bucket, Key: &key, Body: bytes.NewReader(planted)}); err != nil {
		t.Fatal(err)
	}

	if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
		t.Fatalf("a recorded failure is a done message: %v", err)
	}
	r := e.row("events", testDay)
	if r.State != ledger.StateFailed || r.Generation != 1 || r.GenReserved != 0 {
		t.Fatalf("after the planted marker: row state %s generation %d reserved %d, want failed, 1, 0", r.State, r.Generation, r.GenReserved)
	}
	contains(t, "last_error", r.LastError, ledger.ErrBucketAhead.Error(), "s3://"+e.acct.Destination.Bucket+"/"+key,
		"generation 9223372036854775806", "above generation 2", "delete it")
	if got := e.get(key); !bytes.Equal(got, planted) {
		t.Errorf("the planted marker was changed: %q", got)
	}

	// The operator deletes it; the next attempt commits generation 2.
	if _, err := e.s3.DeleteObject(e.ctx, &s3.DeleteObjectInput{Bucket: &e.acct.Destination.Bucket, Key: &key}); err != nil {
		t.Fatal(err)
	}
	r = e.retry("events", testDay)
	if m := e.committed("events", testDay); r.State != ledger.StateCompleted || r.Generation != 2 || m.Generation != 2 {
		t.Errorf("after deleting the marker: row %s generation %d, manifest generation %d; want completed, 2, 2", r.State, r.Generation, m.Generation)
	}
}

// TestBeginGenerationLead: a _SUCCESS up to ledger.MaxBucketLead above the
// claim is a commit the ledger missed, numbered above and noted; one
// further ahead is ErrBucketAhead, with nothing noted and the marker kept.
func TestBeginGenerationLead(t *testing.T) {
	for _, tc := range []struct {
		name  string
		found int64
		want  int64 // 0: ErrBucketAhead
		noted []int64
	}{
		{"level with the claim (a lost Complete)", 4, 5, []int64{4}},
		{"at the margin", 4 + ledger.MaxBucketLead, 5 + ledger.MaxBucketLead, []int64{4 + ledger.MaxBucketLead}},
		{"past the margin", 5 + ledger.MaxBucketLead, 0, nil},
		{"2^63-2", math.MaxInt64 - 1, 0, nil},
		{"the largest int64", math.MaxInt64, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCommitFixture(t)
			ctx := t.Context()
			marker := manifest.NewSuccess(tc.found, "run_0", commitPP+layout.ManifestName, nil, time.Time{}).Encode()
			if err := f.b.Put(ctx, commitPP+layout.SuccessName, marker, "application/json"); err != nil {
				t.Fatal(err)
			}
			rec := &noteRecorder{}
			p, err := f.generation(t, 4, rec).begun(ctx)
			switch {
			case tc.want == 0:
				if !errors.Is(err, ledger.ErrBucketAhead) || !strings.Contains(err.Error(), "s3://dest/"+commitPP+layout.SuccessName) {
					t.Fatalf("Begin = %v, want ErrBucketAhead naming the marker", err)
				}
				if _, err := f.b.Head(ctx, commitPP+layout.SuccessName); err != nil {
					t.Errorf("the marker was removed: %v", err)
				}
			case err != nil || p.Generation() != tc.want:
				t.Fatalf("Begin = %v, %v; want generation %d", p, err, tc.want)
			}
			if fmt.Sprint(rec.noted) != fmt.Sprint(tc.noted) {
				t.Errorf("noted %v, want %v", rec.noted, tc.noted)
			}
		})
	}
}

// TestDeliveredSchemaReadIsBounded: before each export the exporter reads
// back the dataset's _schemas document from the tenant's bucket (the only
// bucket document it reads; the README is HEADed), with
// bucketdocs.MaxSchemaBytes: a planted one past it (valid JSON, padded) is
// read no further, and is not daybook's: the warning names the document
// and the limit, the export goes on (the ledger's record of the delivered
// schema still binds), and its commit puts the document back.
func TestDeliveredSchemaReadIsBounded(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.insert("events", genRows("events", testDay, 3)...)
	e.insert("events", genRows("events", testDay.AddDays(-1), 3)...)
	if r := e.export("events", testDay); r.State != ledger.StateCompleted {
		t.Fatalf("first export: %+v", r)
	}
	key := layout.SchemaKey(e.prefix, "events")
	doc := e.get(key)
	planted := append(bytes.Clone(doc), bytes.Repeat([]byte(" "), bucketdocs.MaxSchemaBytes)...)
	e.putObject(key, planted)
	if r := e.export("events", testDay.AddDays(-1)); r.State != ledger.StateCompleted {
		t.Fatalf("export under an oversized schema document: %+v", r)
	}
	contains(t, "the function's log", e.out.String(), "the delivered schema in the bucket does not read", "s3://"+e.acct.Destination.Bucket+"/"+key, fmt.Sprint(bucketdocs.MaxSchemaBytes))
	if got := e.get(key); !bytes.Equal(got, doc) {
		t.Errorf("the commit did not put the schema document back: %d bytes, want %d", len(got), len(doc))
	}
}
