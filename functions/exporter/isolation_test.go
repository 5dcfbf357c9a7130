package main

import (
	"maps"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// TestTwoAccountsShareABucket puts two accounts in one bucket. An account
// whose prefix would lie inside another's is refused before it is saved; the
// two with prefixes of their own both export, and a re-export of either,
// with its stale-object deletion and its abort of incomplete uploads, leaves
// every object of the other exactly as it was.
func TestTwoAccountsShareABucket(t *testing.T) {
	a := newEnv(t, envOpts{})
	b := newEnv(t, envOpts{bucket: a.acct.Destination.Bucket})
	if b.acct.Destination.Bucket != a.acct.Destination.Bucket || b.prefix == a.prefix {
		t.Fatalf("setup: buckets %s %s, prefixes %s %s", a.acct.Destination.Bucket, b.acct.Destination.Bucket, a.prefix, b.prefix)
	}
	if err := account.CheckIsolation(b.acct, []account.Account{a.acct}, testStage); err != nil {
		t.Fatalf("distinct prefixes in one bucket refused: %v", err)
	}

	// A third account whose rendered prefix lies inside a's is refused, and
	// the refusal names the other account's prefix.
	nested := b.acct
	nested.ID = "acct_nestedaccountxx"
	nested.Destination.Prefix = a.prefix + "/{{.AccountID}}"
	err := account.CheckIsolation(nested, []account.Account{a.acct, b.acct}, testStage)
	if err == nil || !strings.Contains(err.Error(), a.prefix) {
		t.Fatalf("a prefix inside another account's: %v", err)
	}
	if _, err := a.led.Accounts().GetAccount(a.ctx, nested.ID); err == nil {
		t.Fatal("the refused account is in the ledger")
	}

	for _, e := range []*env{a, b} {
		e.insert("events", genRows("events", testDay, 30)...)
		if row := e.export("events", testDay); row.Generation != 1 {
			t.Fatalf("first export %+v", row)
		}
	}
	snapshot := func(e *env) map[string]string {
		out := map[string]string{}
		for key := range e.list(e.prefix + "/") {
			o, err := e.s3.HeadObject(e.ctx, &s3.HeadObjectInput{Bucket: &e.acct.Destination.Bucket, Key: aws.String(key)})
			if err != nil {
				t.Fatal(err)
			}
			out[key] = aws.ToString(o.ETag)
		}
		return out
	}
	for _, pair := range [][2]*env{{a, b}, {b, a}} {
		exporter, other := pair[0], pair[1]
		before := snapshot(other)
		if len(before) == 0 {
			t.Fatal("the other account has no objects")
		}
		// A stray upload of the other account's, in flight, must survive too.
		stray := layout.PartitionPrefix(other.prefix, "events", testDay) + "part-00009.parquet"
		up, err := other.s3.CreateMultipartUpload(other.ctx, &s3.CreateMultipartUploadInput{Bucket: &other.acct.Destination.Bucket, Key: &stray})
		if err != nil {
			t.Fatal(err)
		}
		// A manual re-export, as `daybook reexport` sends it.
		if err := exporter.process(manualBody(t, jobs.Manual{AccountID: exporter.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
			t.Fatal(err)
		}
		if row := exporter.row("events", testDay); row.Generation < 2 || row.State != ledger.StateCompleted {
			t.Fatalf("re-export %+v", row)
		}
		if after := snapshot(other); !maps.Equal(before, after) {
			t.Errorf("a re-export of %s changed %s's objects:\nbefore %v\nafter  %v", exporter.acct.ID, other.acct.ID, before, after)
		}
		uploads, err := other.s3.ListMultipartUploads(other.ctx, &s3.ListMultipartUploadsInput{Bucket: &other.acct.Destination.Bucket, Prefix: aws.String(other.prefix + "/")})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, u := range uploads.Uploads {
			found = found || aws.ToString(u.UploadId) == aws.ToString(up.UploadId)
		}
		if !found {
			t.Errorf("a re-export of %s aborted %s's upload in flight", exporter.acct.ID, other.acct.ID)
		}
		if _, err := other.s3.AbortMultipartUpload(other.ctx, &s3.AbortMultipartUploadInput{Bucket: &other.acct.Destination.Bucket, Key: &stray, UploadId: up.UploadId}); err != nil {
			t.Fatal(err)
		}
	}
}
