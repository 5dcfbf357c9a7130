//go:build !noduckdb

package main

import (
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// TestObjectTagsUnderThePolicy: an account with destination.tags, written
// with the exporter's own role by the exporter as main.go builds it, every
// call checked against the role's policy in template.yaml. Every PutObject
// and CreateMultipartUpload carries the tags (x-amz-tagging), which IAM
// authorizes as s3:PutObjectTagging besides s3:PutObject: the role's
// DirectBucketObjects statement allows both, and every object, the one
// written in a multipart upload too, carries the tags.
func TestObjectTagsUnderThePolicy(t *testing.T) {
	var mu sync.Mutex
	tagging := map[string]int{} // the statements that allowed s3:PutObjectTagging, and how often
	e := newEnv(t, envOpts{allowed: func(action string, sts []string) {
		if action != "s3:PutObjectTagging" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, s := range sts {
			tagging[s]++
		}
	}})
	e.acct.Destination.Tags = exportTags
	if err := e.led.Accounts().PutAccount(e.ctx, e.acct); err != nil {
		t.Fatal(err)
	}
	// A day of one ~11 MiB file (a multipart upload of three parts) and a
	// day of a small one (one PutObject).
	days := []civil.Date{testDay, testDay.AddDays(1)}
	e.insert("events", bigRows(t, 8000)...)
	e.insert("events", genRows("events", days[1], 50)...)
	for _, d := range days {
		if r := e.export("events", d); r.State != ledger.StateCompleted {
			t.Fatalf("%s: %s (%s)", d, r.State, r.LastError)
		}
	}
	if n := e.faults.Count(buckettest.OpCreate); n == 0 {
		t.Error("no multipart upload was started: the test does not cover CreateMultipartUpload")
	}
	keys := slices.Sorted(maps.Keys(e.list(e.prefix + "/")))
	if len(keys) < 10 {
		t.Fatalf("only %d objects: %v", len(keys), keys)
	}
	for _, k := range keys {
		out, err := e.s3.GetObjectTagging(e.ctx, &s3.GetObjectTaggingInput{Bucket: &e.acct.Destination.Bucket, Key: aws.String(k)})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, tag := range out.TagSet {
			got[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
		}
		if !maps.Equal(got, exportTags) {
			t.Errorf("%s: tags %v, want %v", k, got, exportTags)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if tagging["DirectBucketObjects"] < len(keys) {
		t.Errorf("DirectBucketObjects allowed s3:PutObjectTagging %d times for %d objects (statements that allowed it: %v)",
			tagging["DirectBucketObjects"], len(keys), tagging)
	}
}
