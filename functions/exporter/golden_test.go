package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/cputime"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
	"github.com/daybook-dev/daybook/shared/source"
)

// The sums of one run's objects, written by one architecture's run and
// checked by another's (make test-arm64).
var (
	sumsOut = flag.String("sums-out", "", "write the export's object checksums to this file")
	sumsIn  = flag.String("sums", "", "compare the export's object checksums with this file (written by -sums-out)")
)

// fakeBuckets serves every destination from one in-memory bucket store.
type fakeBuckets struct{ store *buckettest.Fake }

func (f fakeBuckets) Client(string, account.Destination) bucket.API { return f.store }

var _ Buckets = fakeBuckets{}

// The files one export writes depend only on the rows, the dataset, the
// format, the injected clock and the run id: not on the machine or the run.
// Two runs in one process write the same bytes; and make test-arm64 runs this
// test on this machine with -sums-out, then on arm64 (the architecture the
// Lambdas are built for) under qemu with -sums, so the binary that ships is
// shown to write the bytes every other test reads back on amd64.
//
// The second run in process reads ahead of the encoder on another goroutine
// (ExportConfig.Pipeline) where the first writes on one: the same bytes.
func TestExportBytesAcrossArchitectures(t *testing.T) {
	first := exportSums(t, -1)
	if *sumsIn != "" {
		want, err := os.ReadFile(*sumsIn)
		if err != nil {
			t.Fatal(err)
		}
		if first != string(want) {
			diffSums(t, *sumsIn, string(want), first)
		}
	} else if again := exportSums(t, 2); again != first {
		diffSums(t, "the run on one goroutine", first, again)
	}
	if *sumsOut != "" {
		if err := os.WriteFile(*sumsOut, []byte(first), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// exportSums exports one day of every dataset in three formats to an
// in-memory bucket and returns "sha256  format/key" lines of every object.
func exportSums(t *testing.T, pipeline int) string {
	t.Helper()
	const rows = 5_000
	ctx := t.Context()
	day := civil.MustParse("2026-03-05")
	now, _ := time.Parse(time.RFC3339, "2026-03-10T12:00:00Z")
	cases := []struct {
		name, format, profile string
		datasets              []string
	}{
		{"parquet-compatible", "parquet", "compatible", []string{"events", "profiles", "daily_stats"}},
		{"parquet-compact", "parquet", "compact", []string{"events"}},
		{"ndjson", "ndjson", "", []string{"events", "daily_stats"}},
	}
	var lines []string
	var exported int64
	cpu := cputime.Start()
	for _, tc := range cases {
		store := buckettest.NewFake("dest")
		db := goldenSource(t, day, rows)
		src, err := source.NewSQL(db, dataset.DialectSQLite, "sqlite:golden.db")
		if err != nil {
			t.Fatal(err)
		}
		a := account.Account{ID: "acct_0123456789abcdef01234567", Name: "golden", Enabled: true, StartDate: civil.MustParse("2026-03-01"),
			Datasets: tc.datasets, Destination: account.Destination{Bucket: "dest", Format: fileformat.Format(tc.format), ParquetProfile: fileformat.ParquetProfile(tc.profile)}}
		exp := &Exporter{
			Catalog: datasettest.Example(t),
			Source:  src.WithClock(func() time.Time { return now }), Buckets: fakeBuckets{store},
			// Small files and parts, so a day rolls to several files and
			// each goes up in several multipart parts.
			Config:              ExportConfig{Stage: "golden", MaxFileBytes: 6 << 20, PartSize: 5 << 20, Concurrency: 2, RowGroupRows: 4096, Pipeline: pipeline},
			Now:                 func() time.Time { return now },
			DeploymentAccountID: buckettest.Owner,
		}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		for _, ds := range tc.datasets {
			c := ledger.Claim{Key: partition.Key{AccountID: a.ID, Dataset: ds, Day: day}, Token: "tok_golden", Attempt: 1, Generation: 1,
				Reason: partition.ReasonScheduled, ClaimedAt: now, LeaseUntil: now.Add(20 * time.Minute)}
			w, err := writeDay(ctx, exp, Partition{Account: a, Dataset: mustDataset(t, ds), Day: day, Claim: c, RunID: "run_golden"}, log)
			if err != nil {
				t.Fatalf("%s %s: %v", tc.name, ds, err)
			}
			exported += w.Manifest.Totals.Rows
		}
		for _, key := range storedKeys(t, ctx, store) {
			lines = append(lines, fmt.Sprintf("%s  %s/%s", objectSum(t, ctx, store, key), tc.name, key))
		}
	}
	spent := cpu.Elapsed()
	t.Logf("%s/%s, pipeline %d: %d rows in %v of CPU (%.0f rows per CPU-second; under qemu a sanity figure, never a speed)",
		runtime.GOOS, runtime.GOARCH, pipeline, exported, spent.Round(time.Millisecond), float64(exported)/spent.Seconds())
	return strings.Join(lines, "\n") + "\n"
}

// objectSum is the SHA-256 of one stored object.
func objectSum(t *testing.T, ctx context.Context, api bucket.API, key string) string {
	t.Helper()
	out, err := api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("dest"), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	h := sha256.New()
	if _, err := io.Copy(h, out.Body); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// storedKeys lists every object of the bucket, in key order.
func storedKeys(t *testing.T, ctx context.Context, api bucket.API) []string {
	t.Helper()
	var keys []string
	p := s3.NewListObjectsV2Paginator(api, &s3.ListObjectsV2Input{Bucket: aws.String("dest")})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

// diffSums names the objects whose bytes differ from those of want.
func diffSums(t *testing.T, wantFrom, want, got string) {
	t.Helper()
	split := func(s string) map[string]string {
		m := map[string]string{}
		for l := range strings.Lines(s) {
			sum, key, _ := strings.Cut(strings.TrimSpace(l), "  ")
			m[key] = sum
		}
		return m
	}
	w, g := split(want), split(got)
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range w {
			if !yield(k) {
				return
			}
		}
		for k := range g {
			if _, ok := w[k]; !ok && !yield(k) {
				return
			}
		}
	})
	var b bytes.Buffer
	for _, k := range keys {
		if w[k] != g[k] {
			fmt.Fprintf(&b, "\n  %s: golden %q, this run %q", k, w[k], g[k])
		}
	}
	t.Errorf("%s/%s wrote other bytes than %s:%s", runtime.GOOS, runtime.GOARCH, wantFrom, b.String())
}

// goldenSource is a SQLite source holding rows rows of each dataset on day.
func goldenSource(t *testing.T, day civil.Date, rows int) *sql.DB {
	t.Helper()
	db, _ := sourceDB(t, false)
	e := &env{t: t, ctx: t.Context(), db: db, acct: account.Account{ID: "acct_0123456789abcdef01234567"}}
	for _, ds := range []string{"events", "profiles", "daily_stats"} {
		e.insert(ds, genRows(ds, day, rows)...)
	}
	return db
}
