package verify_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/mototest"
	"github.com/daybook-dev/daybook/shared/encode"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/loadsql"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/upload"
	"github.com/daybook-dev/daybook/shared/verify"
)

var srv *motoserver.Server

func TestMain(m *testing.M) { os.Exit(mototest.RunTests(m, &srv)) }

var bucketSeq atomic.Int64

// fixture is one bucket holding one partition committed the way the
// exporter commits it: data files streamed with their whole-object CRC32C,
// the manifest, the load scripts, _SUCCESS, and the day's delivery manifest.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	api    *s3.Client
	target verify.Target
	m      *manifest.Manifest
	body   []byte // the manifest's bytes
}

const fixturePrefix = "tenants/acct_7f3a9c"

var fixtureDay = civil.MustParse("2026-03-05")

// commit writes a partition of ds: files data files of rows rows each.
func commit(t *testing.T, api *s3.Client, ds dataset.Dataset, format fileformat.Format, files, rows int) *fixture {
	t.Helper()
	name := fmt.Sprintf("verify-%d", bucketSeq.Add(1))
	if _, err := api.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: &name}); err != nil {
		t.Fatal(err)
	}
	return commitTo(t, api, name, ds, format, files, rows)
}

// commitTo writes the partition of ds into the bucket name, under ds's
// contract.
func commitTo(t *testing.T, api *s3.Client, name string, ds dataset.Dataset, format fileformat.Format, files, rows int) *fixture {
	t.Helper()
	ctx := t.Context()
	f := &fixture{t: t, ctx: ctx, api: api, target: verify.Target{Bucket: name, Prefix: fixturePrefix, Dataset: ds.LedgerName(), Day: fixtureDay}}
	b := bucket.New(api, name, bucket.Options{})
	m := &manifest.Manifest{FormatVersion: manifest.FormatVersion, Contract: layout.Version, AccountID: "acct_7f3a9c", Dataset: ds.Name,
		SchemaVersion: ds.Version, Day: fixtureDay.String(), Partition: ds.Partition, Mode: ds.Mode, Read: ds.Read, Generation: 3,
		RunID: "run_1", Reason: "scheduled", Format: string(format), Compression: string(format.DefaultCodec()), Schema: manifest.SchemaOf(ds)}
	all := datasettest.Varied(ds, files*rows)
	for n := range files {
		key := layout.DataKey(fixturePrefix, ds.LedgerName(), fixtureDay, n, format.Extension())
		w := b.NewWriter(ctx, key, uploadOptions(format))
		enc, err := encode.New(format, w, ds, encode.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range all[n*rows : (n+1)*rows] {
			if err := enc.Write(row); err != nil {
				t.Fatal(err)
			}
		}
		if err := enc.Close(); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r := w.Result()
		m.Files = append(m.Files, manifest.File{Key: key, Rows: enc.Rows(), Bytes: r.Bytes, CRC32C: r.CRC32C, SHA256: r.SHA256})
	}
	m.Sum()
	f.m = m
	f.rewriteManifest(m)
	pp := f.target.PartitionPrefix()
	p, err := loadsql.ForManifest(ds, m, name, pp)
	if err != nil {
		t.Fatal(err)
	}
	scripts, err := loadsql.Scripts(p)
	if err != nil {
		t.Fatal(err)
	}
	for file, body := range scripts {
		f.put(pp+layout.LoadDir+"/"+file, body)
	}
	d := manifest.NewDelivery("acct_7f3a9c", fixtureDay.String(), []manifest.PartitionStatus{{Name: ds.Name, Dataset: &ds, Exists: true,
		State: "completed", Generation: m.Generation, Rows: m.Totals.Rows, Files: len(m.Files), ManifestKey: pp + layout.ManifestName}}, time.Unix(0, 0))
	f.putDelivery(d)
	return f
}

// rewriteManifest stores m and a _SUCCESS committing it.
func (f *fixture) rewriteManifest(m *manifest.Manifest) {
	f.t.Helper()
	body, err := m.Encode()
	if err != nil {
		f.t.Fatal(err)
	}
	pp := f.target.PartitionPrefix()
	f.body = body
	f.put(pp+layout.ManifestName, body)
	f.put(pp+layout.SuccessName, manifest.NewSuccess(m.Generation, m.RunID, pp+layout.ManifestName, body, time.Unix(0, 0)).Encode())
}

func (f *fixture) putDelivery(d *manifest.Delivery) {
	f.t.Helper()
	b, err := d.Encode()
	if err != nil {
		f.t.Fatal(err)
	}
	f.put(layout.DeliveryManifestKey(fixturePrefix, fixtureDay), b)
}

func uploadOptions(format fileformat.Format) upload.Options {
	return upload.Options{ContentType: format.ContentType()}
}

func (f *fixture) put(key string, body []byte) {
	f.t.Helper()
	if _, err := f.api.PutObject(f.ctx, &s3.PutObjectInput{Bucket: &f.target.Bucket, Key: &key, Body: bytes.NewReader(body)}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) get(key string) []byte {
	f.t.Helper()
	out, err := f.api.GetObject(f.ctx, &s3.GetObjectInput{Bucket: &f.target.Bucket, Key: &key})
	if err != nil {
		f.t.Fatal(err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

func (f *fixture) delete(key string) {
	f.t.Helper()
	if _, err := f.api.DeleteObject(f.ctx, &s3.DeleteObjectInput{Bucket: &f.target.Bucket, Key: &key}); err != nil {
		f.t.Fatal(err)
	}
}

// recorder is an S3 API that records every read call it passes on.
type recorder struct {
	bucket.API
	mu  sync.Mutex
	ops []string // "GetObject key [range]", "HeadObject key", "ListObjectsV2 prefix"
}

func (r *recorder) note(op string) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

func (r *recorder) GetObject(ctx context.Context, in *s3.GetObjectInput, o ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	r.note(strings.TrimSpace("GetObject " + aws.ToString(in.Key) + " " + aws.ToString(in.Range)))
	return r.API.GetObject(ctx, in, o...)
}

func (r *recorder) HeadObject(ctx context.Context, in *s3.HeadObjectInput, o ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	r.note("HeadObject " + aws.ToString(in.Key))
	return r.API.HeadObject(ctx, in, o...)
}

func (r *recorder) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, o ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	r.note("ListObjectsV2 " + aws.ToString(in.Prefix))
	return r.API.ListObjectsV2(ctx, in, o...)
}

// count returns how many recorded calls start with prefix.
func (r *recorder) count(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, op := range r.ops {
		if strings.HasPrefix(op, prefix) {
			n++
		}
	}
	return n
}

// in is the bucket name read through api, as verify reads it.
func in(api bucket.API, name string) *bucket.Bucket { return bucket.New(api, name, bucket.Options{}) }
