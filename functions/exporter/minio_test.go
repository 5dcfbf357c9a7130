//go:build !noduckdb

package main

import (
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/devkit/minioserver"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/netguard"
)

// TestExportToMinIO exports one day through a destination's custom endpoint
// to MinIO, a real S3 implementation, which verifies every CRC32C the
// multipart upload sends (each part's and the whole object's, where moto
// verifies none), and checks the committed partition against the stored
// bytes. Two uploads a killed run left at the partition's data keys are
// aborted by the commit although MinIO lists uploads only by key.
func TestExportToMinIO(t *testing.T) {
	mio := minioserver.ForTest(t)
	e := newEnv(t, envOpts{})
	cfg, err := mio.Config(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.s3 = awsclient.NewS3(cfg)
	e.acct.Destination.Bucket, e.acct.Destination.Endpoint = "export-minio", mio.URL
	if _, err := e.s3.CreateBucket(e.ctx, &s3.CreateBucketInput{Bucket: &e.acct.Destination.Bucket}); err != nil {
		t.Fatal(err)
	}
	if err := e.led.Accounts().PutAccount(e.ctx, e.acct); err != nil {
		t.Fatal(err)
	}
	// daybook's own credentials reach the endpoint: MinIO's root user here.
	base := cfg.Copy()
	base.BaseEndpoint = nil
	base.Credentials = credentials.NewStaticCredentialsProvider(minioserver.AccessKey, minioserver.SecretKey, "")
	e.exp.Buckets = faultyBuckets{buckets{&destination.Clients{Base: base, Endpoints: netguard.Policy{AllowLoopback: true}}}, e.faults}

	const rows = 8000
	e.insert("events", bigRows(t, rows)...) // one ~11 MiB Parquet file: three parts
	orphans := []string{
		layout.DataKey(e.prefix, "events", testDay, 0, ".parquet"), // a lost CreateMultipartUpload response
		layout.DataKey(e.prefix, "events", testDay, 1, ".parquet"), // the file a killed run was writing
	}
	for _, k := range orphans {
		if _, err := e.s3.CreateMultipartUpload(e.ctx, &s3.CreateMultipartUploadInput{Bucket: &e.acct.Destination.Bucket, Key: aws.String(k)}); err != nil {
			t.Fatal(err)
		}
	}
	if open := e.uploadsAt(orphans); len(open) != 2 {
		t.Fatalf("orphaned uploads before the export: %v", open)
	}

	e.export("events", testDay)
	m := e.committed("events", testDay) // sizes, CRC32C and SHA-256 of the stored bytes
	if len(m.Files) != 1 || m.Files[0].Rows != rows || m.Files[0].Bytes <= 2*5<<20 {
		t.Fatalf("want one file over two parts, got %+v", m.Files)
	}
	head, err := e.s3.HeadObject(e.ctx, &s3.HeadObjectInput{Bucket: &e.acct.Destination.Bucket, Key: &m.Files[0].Key, ChecksumMode: "ENABLED"})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(head.ChecksumCRC32C) != m.Files[0].CRC32C || head.ChecksumType != "FULL_OBJECT" {
		t.Errorf("MinIO keeps CRC32C %q (%s), the manifest says %s (full object)", aws.ToString(head.ChecksumCRC32C), head.ChecksumType, m.Files[0].CRC32C)
	}
	if open := e.uploadsAt(orphans); len(open) != 0 {
		t.Errorf("uploads left open after the commit: %v", open)
	}
}

// uploadsAt lists the incomplete uploads at keys, one listing by key each
// (MinIO lists none by a prefix that is no object's key).
func (e *env) uploadsAt(keys []string) []string {
	e.t.Helper()
	var open []string
	for _, k := range keys {
		out, err := e.s3.ListMultipartUploads(e.ctx, &s3.ListMultipartUploadsInput{Bucket: &e.acct.Destination.Bucket, Prefix: aws.String(k)})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, u := range out.Uploads {
			if aws.ToString(u.Key) == k {
				open = append(open, k)
			}
		}
	}
	slices.Sort(open)
	return open
}
