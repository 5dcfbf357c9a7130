package verify_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/verify"
)

func mustDataset(t *testing.T, name string) dataset.Dataset {
	t.Helper()
	ds, err := datasettest.Example(t).Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestCheck verifies partitions committed as the exporter commits them,
// intact and tampered with, from the bucket alone.
func TestCheck(t *testing.T) {
	cfg, err := srv.Config(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	api := awsclient.NewS3(cfg)
	events := mustDataset(t, "events")
	part := func(f *fixture, n int) string { return f.m.Files[n].Key }
	for _, tc := range []struct {
		name     string
		format   fileformat.Format
		opts     verify.Options
		tamper   func(f *fixture)
		status   verify.Status
		want     []string // substrings of the report
		problems int
	}{
		{"intact parquet", fileformat.Parquet, verify.Options{}, nil, verify.StatusOK,
			[]string{"as stored by S3", "40 rows (Parquet footer)", "delivered, generation 3", "athena, bigquery", "OK: generation 3, 2 file(s), 80 rows"}, 0},
		{"intact parquet, downloaded", fileformat.Parquet, verify.Options{Download: true}, nil, verify.StatusOK,
			[]string{"recomputed from the bytes", "40 rows (counted in the file)"}, 0},
		{"intact ndjson", fileformat.NDJSON, verify.Options{}, nil, verify.StatusOK,
			[]string{"as stored by S3", "rows not counted"}, 0},
		{"intact ndjson, downloaded", fileformat.NDJSON, verify.Options{Download: true}, nil, verify.StatusOK,
			[]string{"40 rows (counted in the file)"}, 0},
		{"no _SUCCESS", fileformat.Parquet, verify.Options{}, func(f *fixture) {
			f.delete(f.target.PartitionPrefix() + layout.SuccessName)
		}, verify.StatusNotCommitted, []string{"absent: the partition is not complete", "no _SUCCESS now", "NOT COMMITTED"}, 0},
		{"another day, not delivered", fileformat.Parquet, verify.Options{}, func(f *fixture) {
			f.target.Day = f.target.Day.AddDays(1)
		}, verify.StatusNotCommitted, []string{"nothing is in the day folder", "none for 2026-03-06"}, 0},
		{"orphan data file", fileformat.Parquet, verify.Options{}, func(f *fixture) {
			f.put(f.target.PartitionPrefix()+"part-00002.parquet", f.get(part(f, 0)))
		}, verify.StatusFailed, []string{"part-00002.parquet", "not in the manifest"}, 1},
		{"a file missing", fileformat.Parquet, verify.Options{}, func(f *fixture) { f.delete(part(f, 1)) },
			verify.StatusFailed, []string{"part-00001.parquet", "missing"}, 1},
		{"a file shorter", fileformat.Parquet, verify.Options{}, func(f *fixture) {
			f.put(part(f, 1), f.get(part(f, 1))[:100])
		}, verify.StatusFailed, []string{"100 bytes stored"}, 1},
		{"same size, one byte changed, no checksum stored", fileformat.Parquet, verify.Options{}, func(f *fixture) {
			b := f.get(part(f, 0))
			b[len(b)/2] ^= 0xff
			f.put(part(f, 0), b) // a plain PutObject: no CRC32C stored
		}, verify.StatusFailed, []string{"recomputed from the bytes, the manifest says"}, 1},
		{"same size, replaced with its own CRC32C", fileformat.Parquet, verify.Options{}, func(f *fixture) {
			b := f.get(part(f, 0))
			b[len(b)/2] ^= 0xff
			key := part(f, 0)
			if _, err := f.api.PutObject(f.ctx, &s3.PutObjectInput{Bucket: &f.target.Bucket, Key: &key, Body: bytes.NewReader(b),
				ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c}); err != nil {
				t.Fatal(err)
			}
		}, verify.StatusFailed, []string{"stored by S3, the manifest says"}, 1},
		{"manifest edited after the commit", fileformat.Parquet, verify.Options{}, func(f *fixture) {
			f.put(f.target.PartitionPrefix()+layout.ManifestName, bytes.Replace(f.body, []byte(`"run_1"`), []byte(`"run_2"`), 1))
		}, verify.StatusFailed, []string{"not the one _SUCCESS commits"}, 1},
		{"manifest and _SUCCESS rewritten with other row counts", fileformat.Parquet, verify.Options{}, func(f *fixture) {
			f.m.Files[1].Rows++
			f.m.Sum()
			f.rewriteManifest(f.m)
		}, verify.StatusFailed, []string{"40 rows (Parquet footer), the manifest says 41"}, 1},
		{"_SUCCESS names another partition's manifest", fileformat.Parquet, verify.Options{}, func(f *fixture) {
			other := layout.ManifestKey(fixturePrefix, "events", f.target.Day.AddDays(-1))
			f.put(f.target.PartitionPrefix()+layout.SuccessName, manifest.NewSuccess(3, "run_1", other, f.body, f.m.StartedAt).Encode())
		}, verify.StatusFailed, []string{"names manifest " + fixturePrefix + "/v1/events/dt=2026-03-04/_manifest.json"}, 1},
		{"delivery manifest ahead of the partition", fileformat.Parquet, verify.Options{}, func(f *fixture) {
			ds := events
			f.putDelivery(manifest.NewDelivery("acct_7f3a9c", fixtureDay.String(), []manifest.PartitionStatus{{Name: "events", Dataset: &ds,
				Exists: true, State: "completed", Generation: 4}}, f.m.StartedAt))
		}, verify.StatusFailed, []string{"generation 4 was delivered, the partition commits 3"}, 1},
		{"manifest and _SUCCESS rewritten with another SHA-256, downloaded", fileformat.Parquet, verify.Options{Download: true}, func(f *fixture) {
			f.m.Files[0].SHA256 = strings.Repeat("0", 64)
			f.m.Sum()
			f.rewriteManifest(f.m)
		}, verify.StatusFailed, []string{"recomputed from the bytes, the manifest says \"" + strings.Repeat("0", 64) + "\""}, 1},
		{"rows counted by the caller's counter", fileformat.NDJSON, verify.Options{CountRows: func(key string, data []byte) (int64, error) {
			if !strings.HasSuffix(key, ".ndjson.gz") || len(data) == 0 {
				return 0, fmt.Errorf("counter called with %q and %d bytes", key, len(data))
			}
			return 39, nil
		}}, nil, verify.StatusFailed, []string{"39 rows (counted in the file), the manifest says 40"}, 2},
		{"the caller's counter fails", fileformat.Parquet, verify.Options{CountRows: func(string, []byte) (int64, error) {
			return 0, errors.New("row 7 has no key")
		}}, nil, verify.StatusFailed, []string{"rows: row 7 has no key"}, 2},
		{"load scripts missing: a note only", fileformat.Parquet, verify.Options{}, func(f *fixture) {
			f.delete(f.target.PartitionPrefix() + layout.LoadDir + "/duckdb.sql")
		}, verify.StatusOK, []string{"no duckdb.sql"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := commit(t, api, events, tc.format, 2, 40)
			if tc.tamper != nil {
				tc.tamper(f)
			}
			rec := &recorder{API: api}
			r, err := verify.Check(t.Context(), in(rec, f.target.Bucket), f.target, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var report strings.Builder
			if err := r.WriteText(&report); err != nil {
				t.Fatal(err)
			}
			t.Log("\n" + report.String())
			if r.Status != tc.status || len(r.Problems()) != tc.problems {
				t.Errorf("status %s with %d problems, want %s with %d:\n%s", r.Status, len(r.Problems()), tc.status, tc.problems, report.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(report.String(), w) {
					t.Errorf("report does not say %q:\n%s", w, report.String())
				}
			}
		})
	}
}

// TestCheckIsCheap: with S3's stored whole-object CRC32C and Parquet
// footers, verifying never downloads a data file: per file one HEAD and two
// small ranged GETs (the magic bytes and the footer), whatever its size.
func TestCheckIsCheap(t *testing.T) {
	cfg, err := srv.Config(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	api := awsclient.NewS3(cfg)
	f := commit(t, api, mustDataset(t, "events"), fileformat.Parquet, 3, 2000)
	rec := &recorder{API: api}
	r, err := verify.Check(t.Context(), in(rec, f.target.Bucket), f.target, verify.Options{})
	if err != nil || r.Status != verify.StatusOK {
		t.Fatalf("Check = %+v, %v", r, err)
	}
	for _, file := range f.m.Files {
		if n := rec.count("GetObject " + file.Key + " bytes="); n != 2 {
			t.Errorf("%s: %d ranged GETs, want 2 (%v)", file.Key, n, rec.ops)
		}
		if n := rec.count("GetObject "+file.Key) - rec.count("GetObject "+file.Key+" bytes="); n != 0 {
			t.Errorf("%s: downloaded %d times", file.Key, n)
		}
		if n := rec.count("HeadObject " + file.Key); n != 1 {
			t.Errorf("%s: %d HEADs, want 1", file.Key, n)
		}
	}
	if n := rec.count("ListObjectsV2 "); n != 1 {
		t.Errorf("%d listings, want 1", n)
	}
}

func TestCheckRefusesAnIncompleteTarget(t *testing.T) {
	ok := verify.Target{Bucket: "b", Prefix: fixturePrefix, Dataset: "events", Day: fixtureDay}
	for _, tc := range []struct {
		name   string
		change func(t *verify.Target)
		want   string
	}{
		{"no bucket", func(t *verify.Target) { t.Bucket = "" }, "bucket is empty"},
		{"no prefix", func(t *verify.Target) { t.Prefix = "" }, `prefix "": is empty`},
		{"prefix with ..", func(t *verify.Target) { t.Prefix = "a/../b" }, `".."`},
		{"a dataset that cannot be one", func(t *verify.Target) { t.Dataset = "../events" }, "not a dataset name"},
		{"no day", func(t *verify.Target) { t.Day = civil.Date{} }, "day is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := ok
			tc.change(&target)
			rec := &recorder{}
			_, err := verify.Check(t.Context(), in(rec, target.Bucket), target, verify.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || len(rec.ops) != 0 {
				t.Fatalf("Check = %v after %d calls, want an error mentioning %q before any call", err, len(rec.ops), tc.want)
			}
		})
	}
}

// TestCheckCountRowsSeesEveryFile: the caller's counter is called once per
// data file of the manifest with that file's bytes, whatever S3 stored for
// it, and nothing is read twice.
func TestCheckCountRowsSeesEveryFile(t *testing.T) {
	cfg, err := srv.Config(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	api := awsclient.NewS3(cfg)
	f := commit(t, api, mustDataset(t, "events"), fileformat.Parquet, 3, 25)
	seen := map[string]string{}
	rec := &recorder{API: api}
	r, err := verify.Check(t.Context(), in(rec, f.target.Bucket), f.target, verify.Options{CountRows: func(key string, data []byte) (int64, error) {
		seen[key] = verify.CRC32C(data)
		return verify.CountRows(key, data)
	}})
	if err != nil || r.Status != verify.StatusOK || r.Rows != 75 || r.Files != 3 {
		t.Fatalf("Check = %+v, %v", r, err)
	}
	if len(seen) != len(f.m.Files) {
		t.Errorf("counter saw %d files, the manifest lists %d", len(seen), len(f.m.Files))
	}
	for _, file := range f.m.Files {
		if seen[file.Key] != file.CRC32C {
			t.Errorf("%s: counter saw bytes with CRC32C %q, want %q", file.Key, seen[file.Key], file.CRC32C)
		}
		if n := rec.count("GetObject " + file.Key); n != 1 {
			t.Errorf("%s: read %d times, want once (%v)", file.Key, n, rec.ops)
		}
		if n := rec.count("HeadObject " + file.Key); n != 0 {
			t.Errorf("%s: %d HEADs, want none when downloading", file.Key, n)
		}
	}
}

// onStore is a bucket whose URIs are another store's (gs://, abfss://):
// what verify sees of a GCS or Azure bucket, over the fixture's files.
type onStore struct {
	verify.Reader
	base string
}

func (o onStore) URI(key string) string { return o.base + key }

// TestCheckLoadScriptsPerStore: the load scripts verify expects are those
// of the engines that read the bucket's store: on GCS BigQuery, DuckDB and
// Snowflake (Athena and Redshift read S3 only), on Azure also Fabric and
// Databricks (the fixture's S3 scripts lack them: a note).
func TestCheckLoadScriptsPerStore(t *testing.T) {
	cfg, err := srv.Config(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	api := awsclient.NewS3(cfg)
	f := commit(t, api, mustDataset(t, "events"), fileformat.Parquet, 1, 10)
	for _, tc := range []struct {
		base, want string
	}{
		{"s3://" + f.target.Bucket + "/", "athena, bigquery, snowflake, redshift, duckdb"},
		{"gs://" + f.target.Bucket + "/", "_load/                 bigquery, snowflake, duckdb\n"},
		{"abfss://c@acme.dfs.core.windows.net/", "no fabric.sql, databricks.sql"},
	} {
		r, err := verify.Check(t.Context(), onStore{in(api, f.target.Bucket), tc.base}, f.target, verify.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var report strings.Builder
		if err := r.WriteText(&report); err != nil {
			t.Fatal(err)
		}
		if r.Status != verify.StatusOK || !strings.Contains(report.String(), tc.want) {
			t.Errorf("%s: %s, want a report saying %q:\n%s", tc.base, r.Status, tc.want, report.String())
		}
	}
}
