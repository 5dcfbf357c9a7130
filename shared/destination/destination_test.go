package destination_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/mototest"
)

var srv *motoserver.Server

func TestMain(m *testing.M) { os.Exit(mototest.RunTests(m, &srv)) }

func TestConnection(t *testing.T) {
	ctx := context.Background()
	cfg, err := srv.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := awsclient.NewS3(cfg).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("dest-conn-test")}); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	f := &destination.Clients{Base: cfg}

	t.Run("own role", func(t *testing.T) {
		api := f.Client("acct_a", account.Destination{Bucket: "dest-conn-test"})
		checks, err := destination.CheckConnection(ctx, api, "dest-conn-test", "daybook/acct_a", "", now)
		if err != nil {
			t.Fatalf("%v: %+v", err, checks)
		}
		if len(checks) != 6 || checks[4].Permission != "s3:ListBucketMultipartUploads" || !checks[4].OK {
			t.Fatalf("checks %+v", checks)
		}
		out, err := api.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("dest-conn-test")})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Contents) != 0 {
			t.Errorf("the test object was left behind: %s", aws.ToString(out.Contents[0].Key))
		}
	})

	t.Run("assumed role with an external id", func(t *testing.T) {
		d := account.Destination{Bucket: "dest-conn-test", RoleARN: "arn:aws:iam::123456789012:role/daybook-export-x", ExternalID: "ext-1"}
		api := f.Client("acct_b", d)
		if _, err := destination.CheckConnection(ctx, api, d.Bucket, "daybook/acct_b", "", now); err != nil {
			t.Fatal(err)
		}
		creds, err := api.Options().Credentials.Retrieve(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if creds.AccessKeyID == "testing" || creds.SessionToken == "" {
			t.Errorf("credentials were not assumed: %+v", creds.AccessKeyID)
		}
	})

	t.Run("one client per destination identity", func(t *testing.T) {
		d := account.Destination{Bucket: "dest-conn-test", RoleARN: "arn:aws:iam::123456789012:role/daybook-export-x", ExternalID: "ext-1"}
		if f.Client("acct_b", d) != f.Client("acct_b", d) {
			t.Error("the same destination built two clients (and would assume the role twice)")
		}
		d2 := d
		d2.ExternalID = "ext-2"
		if f.Client("acct_b", d) == f.Client("acct_b", d2) {
			t.Error("a different external id reused a client")
		}
	})

	t.Run("no ListBucketMultipartUploads is named in words", func(t *testing.T) {
		api := noUploadListing{f.Client("acct_d", account.Destination{Bucket: "dest-conn-test"})}
		checks, err := destination.CheckConnection(ctx, api, "dest-conn-test", "daybook/acct_d", "", now)
		if err == nil || !strings.Contains(err.Error(), "is missing s3:ListBucketMultipartUploads") {
			t.Fatalf("error %v", err)
		}
		var failed []destination.Check
		for _, c := range checks {
			if !c.OK {
				failed = append(failed, c)
			}
		}
		if len(failed) != 1 || failed[0].Step != "list incomplete multipart uploads under the prefix" ||
			!strings.Contains(failed[0].Problem, "access denied: the role needs s3:ListBucketMultipartUploads on bucket dest-conn-test") ||
			!strings.Contains(failed[0].Problem, "abort those a killed run left behind") {
			t.Errorf("failed checks %+v", failed)
		}
	})

	t.Run("missing bucket is named in words", func(t *testing.T) {
		api := f.Client("acct_c", account.Destination{Bucket: "no-such-bucket-here"})
		checks, err := destination.CheckConnection(ctx, api, "no-such-bucket-here", "p", "", now)
		if err == nil {
			t.Fatal("want an error")
		}
		if !strings.Contains(err.Error(), "s3:PutObject") || !strings.Contains(checks[0].Problem, "does not exist") {
			t.Errorf("error %q, first check %+v", err, checks[0])
		}
	})
}

// noUploadListing is a destination whose role lacks
// s3:ListBucketMultipartUploads.
type noUploadListing struct{ *s3.Client }

func (noUploadListing) ListMultipartUploads(context.Context, *s3.ListMultipartUploadsInput, ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error) {
	return nil, &smithy.GenericAPIError{Code: "AccessDenied", Message: "Access Denied"}
}
