package destination_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/destination"
)

// ignoresIfNoneMatch is a store that ignores the If-None-Match header, as
// some S3-compatible stores do: the request reaches the real store without
// it.
type ignoresIfNoneMatch struct{ *s3.Client }

func (c ignoresIfNoneMatch) PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	cp := *in
	cp.IfNoneMatch = nil
	return c.Client.PutObject(ctx, &cp, opts...)
}

// TestConditionalWrite: the check an Iceberg account's `account test`
// adds passes on the stores that honour If-None-Match (moto, MinIO: a
// conditional write over an existing object is refused), fails in words on
// one that ignores it, and leaves no object behind either way.
func TestConditionalWrite(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	client := func(t *testing.T, minio bool) *s3.Client {
		t.Helper()
		cfg, err := srv.Config(ctx)
		if minio {
			cfg, err = mio.Config(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		c := awsclient.NewS3(cfg)
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("dest-cond-test")}); err != nil && !strings.Contains(err.Error(), "BucketAlready") {
			t.Fatal(err)
		}
		return c
	}
	for _, tc := range []struct {
		name  string
		api   func(t *testing.T) destination.TestAPI
		ok    bool
		words string
	}{
		{"moto", func(t *testing.T) destination.TestAPI { return client(t, false) }, true, ""},
		{"minio", func(t *testing.T) destination.TestAPI { return client(t, true) }, true, ""},
		{"a store that ignores the header", func(t *testing.T) destination.TestAPI { return ignoresIfNoneMatch{client(t, false)} }, false,
			"the store accepted a write with If-None-Match: * over an existing object: it ignores conditional writes; the Iceberg table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := tc.api(t)
			c := destination.CheckConditionalWrite(ctx, api, "dest-cond-test", "daybook/acct_c", "", now)
			if c.OK != tc.ok || !strings.Contains(c.Problem, tc.words) || c.Step != destination.ConditionalWriteStep {
				t.Fatalf("check %+v; want ok %v saying %q", c, tc.ok, tc.words)
			}
			out, err := api.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("dest-cond-test"), Prefix: aws.String("daybook/acct_c/")})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Contents) != 0 {
				t.Errorf("left behind: %s", aws.ToString(out.Contents[0].Key))
			}
		})
	}
}
