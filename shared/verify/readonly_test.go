package verify_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/bucketdocs"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/verify"
)

// iam calls moto's IAM query API, signed with cfg's credentials (the SDK's
// IAM client is not a dependency of this module).
func iam(t *testing.T, cfg aws.Config, params url.Values) []byte {
	t.Helper()
	ctx := t.Context()
	params.Set("Version", "2010-05-08")
	body := params.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	creds, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(body))
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "iam", motoserver.Region, time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("IAM %s: %s %s %v", params.Get("Action"), resp.Status, out, err)
	}
	return out
}

// enforceIAM makes moto check every request's signature and IAM policy
// until the test ends (moto's own switch: authentication starts after the
// given number of requests).
func enforceIAM(t *testing.T) {
	t.Helper()
	set := func(count string) {
		resp, err := http.Post(srv.URL+"/moto-api/reset-auth", "text/plain", strings.NewReader(count))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("moto reset-auth %s: %s", count, resp.Status)
		}
	}
	set("0")
	t.Cleanup(func() { set("inf") })
}

// userWithPolicy creates an IAM user with the inline policy (none when
// empty) and returns a client acting as that user.
func userWithPolicy(t *testing.T, admin aws.Config, name, policy string) *s3.Client {
	t.Helper()
	iam(t, admin, url.Values{"Action": {"CreateUser"}, "UserName": {name}})
	if policy != "" {
		iam(t, admin, url.Values{"Action": {"PutUserPolicy"}, "UserName": {name}, "PolicyName": {"read"}, "PolicyDocument": {policy}})
	}
	var key struct {
		ID     string `xml:"CreateAccessKeyResult>AccessKey>AccessKeyId"`
		Secret string `xml:"CreateAccessKeyResult>AccessKey>SecretAccessKey"`
	}
	if err := xml.Unmarshal(iam(t, admin, url.Values{"Action": {"CreateAccessKey"}, "UserName": {name}}), &key); err != nil || key.ID == "" {
		t.Fatalf("access key of %s: %+v %v", name, key, err)
	}
	cfg := admin.Copy()
	cfg.Credentials = credentials.NewStaticCredentialsProvider(key.ID, key.Secret, "")
	return awsclient.NewS3(cfg)
}

var policyRE = regexp.MustCompile("(?s)```json\n(.*?)```")

// readmePolicy is the read-only policy the bucket README gives for target.
func readmePolicy(t *testing.T, target verify.Target) string {
	t.Helper()
	ds, err := datasettest.Example(t).Get(target.Dataset)
	if err != nil {
		t.Fatal(err)
	}
	readme, err := bucketdocs.README(bucketdocs.Input{Bucket: target.Bucket, Prefix: target.Prefix, Format: fileformat.Parquet,
		TimeZone: "UTC", Datasets: []dataset.Dataset{ds}})
	if err != nil {
		t.Fatal(err)
	}
	m := policyRE.FindSubmatch(readme)
	if m == nil {
		t.Fatal("the README gives no policy")
	}
	return string(m[1])
}

// motoEncoding makes a client send object keys with "=" unescaped in the
// path, which S3 reads the same as "%3D": moto's signature check rebuilds
// the canonical request from the decoded path, so a key holding "dt=" fails
// its check otherwise. (It rebuilds the query the same way, so a listing
// whose prefix holds "/" cannot pass it at all: see the test below.)
func motoEncoding(stack *middleware.Stack) error {
	return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("motoEncoding",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			if req, ok := in.Request.(*smithyhttp.Request); ok {
				req.URL.RawPath = strings.ReplaceAll(req.URL.EscapedPath(), "%3D", "=")
			}
			return next.HandleFinalize(ctx, in)
		}), "Signing", middleware.Before)
}

// TestReadmePolicyAllowsCheck runs Check once (recording its calls), then
// makes moto enforce IAM and replays every object read Check made as an IAM
// user whose only policy is the one the bucket README gives: each is
// allowed, while the same user can neither write nor delete, and a user
// without the policy cannot read, which shows the enforcement is real.
//
// Moto cannot check the listing: its signature check rebuilds the query
// from the decoded URL, so a ListObjectsV2 whose prefix holds "/" never
// matches the SDK's signature, and it does not evaluate the policy's
// s3:prefix condition. The listing is therefore covered by the recording
// test below (one listing, under the prefix), and the ListBucket statement
// runs here without its condition.
func TestReadmePolicyAllowsCheck(t *testing.T) {
	admin, err := srv.Config(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	adminS3 := awsclient.NewS3(admin)
	f := commit(t, adminS3, mustDataset(t, "events"), fileformat.Parquet, 2, 30)
	rec := &recorder{API: adminS3}
	for _, o := range []verify.Options{{}, {Download: true}} {
		if r, err := verify.Check(t.Context(), in(rec, f.target.Bucket), f.target, o); err != nil || r.Status != verify.StatusOK {
			t.Fatalf("Check = %+v, %v", r, err)
		}
	}
	policy := readmePolicy(t, f.target)
	if !strings.Contains(policy, `"s3:prefix": "`+fixturePrefix+`/v1/*"`) {
		t.Fatalf("the README policy does not scope the listing to the prefix:\n%s", policy)
	}
	policy = regexp.MustCompile(`,\s*"Condition": \{[^}]*\}\}`).ReplaceAllString(policy, "")
	withEncoding := func(c *s3.Client) *s3.Client {
		return s3.New(c.Options(), func(o *s3.Options) { o.APIOptions = append(o.APIOptions, motoEncoding) })
	}
	reader := withEncoding(userWithPolicy(t, admin, "verify-reader", policy))
	nobody := withEncoding(userWithPolicy(t, admin, "verify-nobody", ""))
	enforceIAM(t)

	ctx := context.Background()
	reads := 0
	for _, op := range rec.ops {
		verb, rest, _ := strings.Cut(op, " ")
		key, rng, _ := strings.Cut(rest, " ")
		var err error
		switch verb {
		case "ListObjectsV2":
			continue
		case "HeadObject":
			_, err = reader.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &f.target.Bucket, Key: &key, ChecksumMode: types.ChecksumModeEnabled})
		case "GetObject":
			in := &s3.GetObjectInput{Bucket: &f.target.Bucket, Key: &key}
			if rng != "" {
				in.Range = &rng
			}
			var out *s3.GetObjectOutput
			if out, err = reader.GetObject(ctx, in); err == nil {
				out.Body.Close()
			}
		default:
			t.Fatalf("Check made a call that is not a read: %s", op)
		}
		if err != nil {
			t.Errorf("%s as the read-only user: %v", op, err)
		}
		reads++
	}
	if reads < 10 {
		t.Fatalf("only %d reads replayed: %v", reads, rec.ops)
	}
	key := f.m.Files[0].Key
	denied := func(what string, err error) {
		t.Helper()
		var api smithy.APIError
		if !errors.As(err, &api) || api.ErrorCode() != "AccessDenied" {
			t.Errorf("%s = %v, want AccessDenied", what, err)
		}
	}
	_, err = reader.PutObject(ctx, &s3.PutObjectInput{Bucket: &f.target.Bucket, Key: aws.String(f.target.PartitionPrefix() + "x"), Body: strings.NewReader("x")})
	denied("PutObject as the read-only user", err)
	_, err = reader.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &f.target.Bucket, Key: &key})
	denied("DeleteObject as the read-only user", err)
	_, err = nobody.GetObject(ctx, &s3.GetObjectInput{Bucket: &f.target.Bucket, Key: &key})
	denied("GetObject as a user without the policy", err)
}

// TestCheckReadsOnlyUnderThePrefix records every call: Check makes only
// read calls (its ReadAPI has no other), and every key or listing prefix
// is under the target's `<prefix>/v1/`, which the README's policy allows.
func TestCheckReadsOnlyUnderThePrefix(t *testing.T) {
	cfg, err := srv.Config(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	api := awsclient.NewS3(cfg)
	f := commit(t, api, mustDataset(t, "events"), fileformat.NDJSON, 2, 10)
	for _, o := range []verify.Options{{}, {Download: true}} {
		rec := &recorder{API: api}
		if r, err := verify.Check(t.Context(), in(rec, f.target.Bucket), f.target, o); err != nil || r.Status != verify.StatusOK {
			t.Fatalf("Check = %+v, %v", r, err)
		}
		if len(rec.ops) == 0 {
			t.Fatal("no call recorded")
		}
		for _, op := range rec.ops {
			verb, rest, _ := strings.Cut(op, " ")
			switch verb {
			case "GetObject", "HeadObject", "ListObjectsV2":
			default:
				t.Errorf("call %s is not a read", op)
			}
			if !strings.HasPrefix(rest, fixturePrefix+"/v1/") {
				t.Errorf("call %s reaches outside %s/v1/", op, fixturePrefix)
			}
		}
	}
}
