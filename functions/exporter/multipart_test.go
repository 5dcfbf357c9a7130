//go:build !noduckdb

package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/layout"
)

// TestMultipartFile exports a day whose one file is larger than a 5 MiB
// multipart part. The first run loses its second part: the multipart upload
// is aborted and nothing is committed. The retry streams the file in parts
// and commits it, and the manifest's CRC32C is the stored object's (moto does
// not verify checksums, so the test recomputes it from the bytes).
func TestMultipartFile(t *testing.T) {
	e := newEnv(t, envOpts{})
	const rows = 8000
	// ~1.4 KB of hex per row: incompressible enough for snappy that the
	// Parquet file is ~11 MiB, three 5 MiB parts.
	e.insert("events", bigRows(t, rows)...)
	file := e.partPrefix("events", testDay) + "part-00000.parquet"

	e.failOnce(func(c buckettest.Call) bool { return c.Op == buckettest.OpUploadPart && c.Part == 2 && c.Key == file })
	c := e.claim("events", testDay, "")
	if err := e.process(jobBody(t, c)); err != nil {
		t.Fatal(err)
	}
	failed := e.notCommitted("events", testDay)
	contains(t, "last_error", failed.LastError, "part 2", errInjected.Error())
	if left := e.list(e.partPrefix("events", testDay)); len(left) != 0 {
		t.Errorf("objects left by the aborted upload: %v", sortedKeys(left))
	}
	f := e.faults
	if c, n := f.Count(buckettest.OpCreate), f.Count(buckettest.OpComplete); c != 1 || n != 0 {
		t.Errorf("the failed run created %d multipart uploads and completed %d; want 1 created (then aborted), 0 completed", c, n)
	}

	f.Set(nil, nil)
	partsBefore := f.Count(buckettest.OpUploadPart)
	e.retry("events", testDay)
	m := e.committed("events", testDay) // CRC32C and SHA-256 from the stored bytes
	if len(m.Files) != 1 || m.Files[0].Rows != rows || m.Files[0].Bytes <= 2*5<<20 {
		t.Fatalf("want one file over two parts, got %+v", m.Files)
	}
	parts := f.Count(buckettest.OpUploadPart) - partsBefore
	if completes := f.Count(buckettest.OpComplete); parts < 3 || completes != 1 {
		t.Errorf("retry sent %d parts and %d completes; want >= 3 parts, 1 complete", parts, completes)
	}
	if open := e.openUploads(); len(open) != 0 {
		t.Errorf("open uploads %v", open)
	}
	t.Logf("multipart file: %d bytes in %d parts, CRC32C %s", m.Files[0].Bytes, parts, m.Files[0].CRC32C)

	db := duckcheck.Open(t)
	dir := e.download()
	var n int64
	var blobs int64
	if err := db.QueryRow("SELECT count(*), count(DISTINCT attributes->>'blob') FROM "+fromClause(dir, mustDataset(t, "events"), "")).Scan(&n, &blobs); err != nil {
		t.Fatal(err)
	}
	if n != rows || blobs != rows {
		t.Errorf("DuckDB read %d rows (%d distinct blobs), want %d", n, blobs, rows)
	}
	if !strings.HasPrefix(m.Files[0].Key, e.prefix+"/"+layout.Version+"/events/") {
		t.Errorf("key %s", m.Files[0].Key)
	}
}

// sdkRetry retries a failed CreateMultipartUpload once, as the SDK's
// retryer does when a response is lost; below it, Faults can let the first
// call take effect and fail it.
type sdkRetry struct{ bucket.API }

func (a sdkRetry) CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, o ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	out, err := a.API.CreateMultipartUpload(ctx, in, o...)
	if errors.Is(err, errInjected) {
		return a.API.CreateMultipartUpload(ctx, in, o...)
	}
	return out, err
}

type retryingBuckets struct{ b Buckets }

func (r retryingBuckets) Client(id string, d account.Destination) bucket.API {
	return sdkRetry{r.b.Client(id, d)}
}

// TestLostCreateResponseLeavesNoUpload: the response to the data file's
// CreateMultipartUpload is lost after S3 started the upload. Whether the
// SDK's retry carries the same run to its commit, or the run fails and a
// later one commits, the commit aborts the orphaned upload: nothing
// incomplete is left under the partition, lifecycle rule or not.
func TestLostCreateResponseLeavesNoUpload(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sdkRetry bool
	}{
		{"the SDK retries and the run commits", true},
		{"the run fails and the retry commits", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOpts{})
			if tc.sdkRetry {
				e.exp.Buckets = retryingBuckets{e.exp.Buckets}
			}
			e.insert("events", bigRows(t, 4200)...) // one ~6 MiB file: a multipart upload
			file := e.partPrefix("events", testDay) + "part-00000.parquet"
			e.crashOnceAfter(func(c buckettest.Call) bool { return c.Op == buckettest.OpCreate && c.Key == file })
			c := e.claim("events", testDay, "")
			if err := e.process(jobBody(t, c)); err != nil {
				t.Fatal(err)
			}
			if !tc.sdkRetry {
				if open := e.openUploads(); len(open) != 1 || open[0] != file {
					t.Fatalf("the failed run should leave its orphaned upload: %v", open)
				}
				e.faults.Set(nil, nil)
				e.retry("events", testDay)
			}
			m := e.committed("events", testDay)
			if len(m.Files) != 1 || m.Files[0].Bytes <= 5<<20 {
				t.Fatalf("want one multipart file, got %+v", m.Files)
			}
			if n := e.faults.Count(buckettest.OpCreate); n != 2 {
				t.Errorf("%d CreateMultipartUpload calls, want 2 (the lost one and the retry)", n)
			}
			if open := e.openUploads(); len(open) != 0 {
				t.Errorf("incomplete uploads left after the commit: %v", open)
			}
			if n := e.faults.Count(buckettest.OpAbortMultipart); n != 1 {
				t.Errorf("%d aborts, want 1 (the orphan, at the commit)", n)
			}
		})
	}
}

// bigRows returns n events rows of ~1.4 KB of incompressible hex each.
func bigRows(t *testing.T, n int) [][]any {
	r := seeded(t, "blobs")
	blob := make([]byte, 700)
	gen := genRows("events", testDay, n)
	for _, row := range gen {
		_, _ = r.Read(blob)
		row[9] = fmt.Sprintf(`{"blob":"%s"}`, hex.EncodeToString(blob))
	}
	return gen
}
