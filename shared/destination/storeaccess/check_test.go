package storeaccess_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/destination/storeaccess"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/mototest"
)

var srv *motoserver.Server

func TestMain(m *testing.M) { os.Exit(mototest.RunTests(m, &srv)) }

// overwriting is a bucket whose create-if-absent writes overwrite, as a
// store without conditional writes would.
type overwriting struct{ storeaccess.StoreBucket }

func (o overwriting) PutIfAbsent(ctx context.Context, key string, body []byte, ct string) error {
	return o.Put(ctx, key, body, ct)
}

// TestCheckStore: the store-neutral connection test runs every step
// through the bucket interface (here on moto's S3, the store whose driver
// exists on every branch), passes on a working bucket, names each step's
// need and the store's words on a failure, and fails a store that lets a
// create-if-absent write overwrite.
func TestCheckStore(t *testing.T) {
	ctx := context.Background()
	cfg, err := srv.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	api := awsclient.NewS3(cfg)
	if _, err := api.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("store-check")}); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	probe := storeaccess.StoreProbe{
		Where: "s3://store-check",
		Needs: storeaccess.StepNeeds{Write: "w", Read: "r", Upload: "u", CreateIfAbsent: "c", List: "l", Delete: "d"},
		StartAbort: func(ctx context.Context, key string) error {
			out, err := api.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("store-check"), Key: &key})
			if err != nil {
				return err
			}
			_, err = api.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String("store-check"), Key: &key, UploadId: out.UploadId})
			return err
		},
		Explain: func(err error) string {
			if strings.Contains(err.Error(), "NoSuchBucket") {
				return "the words for a missing bucket"
			}
			return ""
		},
	}
	checks, err := storeaccess.CheckStore(ctx, bucket.New(api, "store-check", bucket.Options{}), probe, "daybook/acct_a", now)
	if err != nil || len(checks) != 6 {
		t.Fatalf("%v: %+v", err, checks)
	}
	left, err := api.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("store-check")})
	if err != nil || len(left.Contents) != 0 {
		t.Errorf("the test left %d objects (%v)", len(left.Contents), err)
	}

	checks, err = storeaccess.CheckStore(ctx, overwriting{bucket.New(api, "store-check", bucket.Options{})}, probe, "daybook/acct_a", now)
	if err == nil || checks[3].OK || !strings.Contains(checks[3].Problem, "overwrote an existing object") || checks[3].Permission != "c" {
		t.Errorf("an overwriting create-if-absent: %v %+v", err, checks)
	}

	checks, err = storeaccess.CheckStore(ctx, bucket.New(api, "no-such-bucket", bucket.Options{}), probe, "daybook/acct_a", now)
	if !errors.Is(err, bucket.ErrNoSuchBucket) {
		t.Errorf("a missing bucket: %v", err)
	}
	for _, c := range checks {
		if c.Step != "start and abandon an upload" && (c.OK || c.Problem != "the words for a missing bucket") {
			t.Errorf("step %q: ok %v, problem %q", c.Step, c.OK, c.Problem)
		}
	}
}
