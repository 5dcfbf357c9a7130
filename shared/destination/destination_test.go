package destination_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/devkit/minioserver"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/mototest"
	"github.com/daybook-dev/daybook/shared/upload"
)

var (
	srv *motoserver.Server
	mio *minioserver.Server
)

func TestMain(m *testing.M) {
	os.Exit(minioserver.Around(func() int { return mototest.RunTests(m, &srv) }, &mio))
}

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
		checks, err := destination.CheckConnection(ctx, api, "dest-conn-test", "daybook/acct_a", "", upload.S3Attributes{}, now)
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
		if _, err := destination.CheckConnection(ctx, api, d.Bucket, "daybook/acct_b", "", upload.S3Attributes{}, now); err != nil {
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
		checks, err := destination.CheckConnection(ctx, api, "dest-conn-test", "daybook/acct_d", "", upload.S3Attributes{}, now)
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
		checks, err := destination.CheckConnection(ctx, api, "no-such-bucket-here", "p", "", upload.S3Attributes{}, now)
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

// recordingSTS is moto's STS, remembering every AssumeRole input.
type recordingSTS struct {
	*sts.Client
	mu     sync.Mutex
	inputs []sts.AssumeRoleInput
}

func (r *recordingSTS) AssumeRole(ctx context.Context, in *sts.AssumeRoleInput, opts ...func(*sts.Options)) (*sts.AssumeRoleOutput, error) {
	r.mu.Lock()
	r.inputs = append(r.inputs, *in)
	r.mu.Unlock()
	return r.Client.AssumeRole(ctx, in, opts...)
}

// TestSessionPolicy: with SessionPolicy, the AssumeRole for a customer's
// role carries it (the console's sessions may only read the account's
// bucket); without it, no session policy is sent.
func TestSessionPolicy(t *testing.T) {
	ctx := context.Background()
	cfg, err := srv.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := account.Destination{Bucket: "dest-policy-test", RoleARN: "arn:aws-cn:iam::123456789012:role/daybook-export-p", ExternalID: "ext-p"}
	for _, tt := range []struct {
		name   string
		policy func(account.Destination) string
		want   string
	}{
		{"read objects only", destination.ReadObjectsPolicy,
			`{"Version":"2012-10-17","Statement":[{"Sid":"ReadObjects","Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws-cn:s3:::dest-policy-test/*"}]}`},
		{"none", nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recordingSTS{Client: sts.NewFromConfig(cfg)}
			f := &destination.Clients{Base: cfg, STS: rec, SessionPolicy: tt.policy}
			if _, err := f.Client("acct_p", d).Options().Credentials.Retrieve(ctx); err != nil {
				t.Fatal(err)
			}
			if len(rec.inputs) != 1 {
				t.Fatalf("%d AssumeRole calls, want 1", len(rec.inputs))
			}
			in := rec.inputs[0]
			if got := aws.ToString(in.Policy); got != tt.want || aws.ToString(in.RoleArn) != d.RoleARN || aws.ToString(in.ExternalId) != d.ExternalID {
				t.Errorf("AssumeRole of %s (external id %s) with session policy %s, want %s",
					aws.ToString(in.RoleArn), aws.ToString(in.ExternalId), got, tt.want)
			}
		})
	}
	if got := destination.ReadObjectsPolicy(account.Destination{Bucket: "b"}); !strings.Contains(got, `"arn:aws:s3:::b/*"`) {
		t.Errorf("own role's policy %s: want the aws partition", got)
	}
}

// TestRoleCredentialsKept (issue 25 §3): a destination's assumed-role
// credentials serve every request until RefreshMargin before they expire,
// by the injected clock: one AssumeRole for many requests, and a fresh one
// from then on.
func TestRoleCredentialsKept(t *testing.T) {
	ctx := context.Background()
	cfg, err := srv.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	rec := &recordingSTS{Client: sts.NewFromConfig(cfg)}
	f := &destination.Clients{Base: cfg, STS: rec, Now: clock}
	d := account.Destination{Bucket: "dest-keep-test", RoleARN: "arn:aws:iam::123456789012:role/daybook-export-k", ExternalID: "ext-k"}
	creds := f.Client("acct_k", d).Options().Credentials
	first, err := creds.Retrieve(ctx)
	if err != nil || !first.CanExpire {
		t.Fatalf("first credentials %+v, %v: want expiring ones", first, err)
	}
	calls := func() int { rec.mu.Lock(); defer rec.mu.Unlock(); return len(rec.inputs) }
	for _, tc := range []struct {
		at    time.Time
		calls int
	}{
		{now, 1},
		{first.Expires.Add(-destination.RefreshMargin - time.Second), 1},
		{first.Expires.Add(-destination.RefreshMargin), 2},
	} {
		set(tc.at)
		if _, err := f.Client("acct_k", d).Options().Credentials.Retrieve(ctx); err != nil {
			t.Fatal(err)
		}
		if n := calls(); n != tc.calls {
			t.Errorf("at %s (credentials expire %s): %d AssumeRole calls, want %d", tc.at.Format(time.RFC3339), first.Expires.Format(time.RFC3339), n, tc.calls)
		}
	}
}
