package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/bucket/gcs"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/gcsserver"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc"
)

// The encryption and tags of TestExportToEveryStore's destinations.
const (
	s3Key      = "arn:aws:kms:us-east-1:123456789012:key/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
	gcsKey     = "projects/acme-data/locations/europe-west1/keyRings/daybook/cryptoKeys/exports"
	azureScope = "daybookexports"
)

var exportTags = map[string]string{"retention": "7y", "cost-center": "data eng"}

// s3Encrypted: every object the export wrote (data, manifests, markers,
// scripts, delivery manifest, change log, README, schemas, Iceberg
// metadata) is SSE-KMS with the destination's key and a Bucket Key, and
// carries its tags, as moto keeps them.
func s3Encrypted(e *env, keys []string) {
	e.t.Helper()
	if len(keys) < 10 {
		e.t.Fatalf("only %d objects: %v", len(keys), keys)
	}
	for _, k := range keys {
		h, err := e.s3.HeadObject(e.ctx, &s3.HeadObjectInput{Bucket: &e.acct.Destination.Bucket, Key: aws.String(k)})
		if err != nil {
			e.t.Fatal(err)
		}
		if h.ServerSideEncryption != "aws:kms" || aws.ToString(h.SSEKMSKeyId) != s3Key {
			e.t.Errorf("%s: encryption %s %s, want aws:kms %s", k, h.ServerSideEncryption, aws.ToString(h.SSEKMSKeyId), s3Key)
		}
		tags, err := e.s3.GetObjectTagging(e.ctx, &s3.GetObjectTaggingInput{Bucket: &e.acct.Destination.Bucket, Key: aws.String(k)})
		if err != nil {
			e.t.Fatal(err)
		}
		got := map[string]string{}
		for _, t := range tags.TagSet {
			got[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
		if fmt.Sprint(got) != fmt.Sprint(exportTags) {
			e.t.Errorf("%s: tags %v, want %v", k, got, exportTags)
		}
	}
}

// gcsEncrypted: every object carries the tags as metadata, and every
// request that wrote one named the customer-managed key (fake-gcs-server
// keeps no kmsKeyName; GCS does).
func gcsEncrypted(e *env, keys []string, sent *buckettest.Requests, srv *serverproc.Process) {
	e.t.Helper()
	c, err := gcs.NewClient(e.ctx, gcs.Config{Endpoint: gcsserver.Endpoint(srv)})
	if err != nil {
		e.t.Fatal(err)
	}
	defer c.Close()
	for _, k := range keys {
		a, err := c.Attrs(context.Background(), e.acct.Destination.Bucket, k)
		if err != nil {
			e.t.Fatal(err)
		}
		for tk, tv := range exportTags {
			if a.Metadata[tk] != tv {
				e.t.Errorf("%s: metadata %v, want the tags %v", k, a.Metadata, exportTags)
				break
			}
		}
		writes := sent.Matching(func(q buckettest.Request) bool {
			// The requests that opened an upload; a resumable session's
			// chunks (upload_id) carry no attributes.
			return q.Method == http.MethodPost && q.URL.Query().Get("name") == k && !q.URL.Query().Has("upload_id")
		})
		if len(writes) == 0 {
			e.t.Errorf("%s: no upload request recorded", k)
		}
		for _, q := range writes {
			if got := q.URL.Query().Get("kmsKeyName"); got != gcsKey {
				e.t.Errorf("%s: written with kmsKeyName %q, want %s", k, got, gcsKey)
			}
		}
	}
}

// azureEncrypted: every blob carries the tags as index tags, and every
// request that wrote one (Put Blob, Put Block, Put Block List) named the
// encryption scope (Azurite keeps none; Azure does).
func azureEncrypted(e *env, keys []string, sent *buckettest.Requests, srv *serverproc.Process) {
	e.t.Helper()
	c, err := buckettest.AzuriteClient(srv, e.acct.Destination.Bucket)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, k := range keys {
		tags, err := c.NewBlockBlobClient(k).GetTags(context.Background(), nil)
		if err != nil {
			e.t.Fatal(err)
		}
		got := map[string]string{}
		for _, t := range tags.BlobTagSet {
			got[*t.Key] = *t.Value
		}
		if fmt.Sprint(got) != fmt.Sprint(exportTags) {
			e.t.Errorf("%s: index tags %v, want %v", k, got, exportTags)
		}
		writes := sent.Matching(func(q buckettest.Request) bool {
			p, _ := url.PathUnescape(q.URL.Path)
			return q.Method == http.MethodPut && strings.HasSuffix(p, "/"+e.acct.Destination.Bucket+"/"+k) && q.URL.Query().Get("comp") != "tags"
		})
		if len(writes) == 0 {
			e.t.Errorf("%s: no write recorded", k)
		}
		for _, q := range writes {
			if v := q.Header.Values("x-ms-encryption-scope"); !slices.Equal(v, []string{azureScope}) {
				e.t.Errorf("%s: %s written with encryption scope %v, want %s", k, q.URL.Query().Get("comp"), v, azureScope)
			}
		}
	}
}
