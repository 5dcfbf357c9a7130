package destination_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/destination"
)

// kmsDenied is S3's answer to a write or read of an SSE-KMS object by a
// role that may not use the key: 403 AccessDenied, the kms: action named in
// the message (the shape S3 sends, from AWS's documentation of the error).
const kmsDenied = `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>AccessDenied</Code><Message>User: arn:aws:sts::444455556666:assumed-role/daybook-export-acme/daybook-acct_a is not authorized to perform: kms:GenerateDataKey on resource: arn:aws:kms:us-east-1:444455556666:key/1234abcd-12ab-34cd-56ef-1234567890ab because no identity-based policy allows the kms:GenerateDataKey action</Message><RequestId>4442587FB7D0A2F9</RequestId><HostId>daybook-test</HostId></Error>`

// refusing is a config whose S3 calls reach moto through a proxy that
// answers each request refuse picks with 403 denied (S3's XML error), as
// S3 answers a role missing a permission; bucket is created first.
func refusing(t *testing.T, bucket string, refuse func(*http.Request) bool, denied string) aws.Config {
	t.Helper()
	cfg, err := srv.Config(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := awsclient.NewS3(cfg).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	moto, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	forward := httputil.NewSingleHostReverseProxy(moto)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse(r) {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(denied))
			return
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	cfg.BaseEndpoint = aws.String(proxy.URL)
	return cfg
}

// TestCheckConnectionNamesAKMSDenial: account test writes with the
// destination's KMS key; a store that refuses the key (a proxy in front of
// moto answering every object write and read as S3 does when the role may
// not use the key) fails the write, read and multipart steps naming the key
// and the two permissions in words, while the listings pass.
func TestCheckConnectionNamesAKMSDenial(t *testing.T) {
	cfg := refusing(t, "dest-kms-test", func(r *http.Request) bool {
		object := strings.Count(strings.Trim(r.URL.Path, "/"), "/") > 0
		return object && (r.Method == http.MethodPut || r.Method == http.MethodPost && r.URL.Query().Has("uploads") || r.Method == http.MethodGet)
	}, kmsDenied)
	const key = "arn:aws:kms:us-east-1:444455556666:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	d := account.Destination{Bucket: "dest-kms-test", Encryption: &account.Encryption{KMSKey: key}}
	checks, err := destination.CheckConnection(t.Context(), awsclient.NewS3(cfg), d.Bucket, "daybook/acct_a", "",
		destination.S3Attributes(d, "444455556666"), time.Unix(1, 0))
	if err == nil {
		t.Fatal("the connection test passed with the key refused")
	}
	want := "the role may not use key " + key + ": grant kms:GenerateDataKey and kms:Decrypt"
	failed := map[string]bool{}
	for _, c := range checks {
		if !c.OK {
			failed[c.Step] = true
			if !strings.Contains(c.Problem, want) {
				t.Errorf("%s: %q, want %q", c.Step, c.Problem, want)
			}
		}
	}
	for _, step := range []string{"write a small object", "read it back", "start and abort a multipart upload"} {
		if !failed[step] {
			t.Errorf("step %q passed with the key refused: %+v", step, checks)
		}
	}
	if failed["list the prefix"] {
		t.Errorf("the listing failed: %+v", checks)
	}
}

// TestCheckConnectionNamesTheTaggingPermission: a destination with tags
// writes every object with them, which S3 authorizes as
// s3:PutObjectTagging; a role without it (a proxy in front of moto
// refusing every tagged write, as S3 does) fails the write and the
// multipart steps, each naming the tagging permission (the read of the
// object not written fails with them), while the listings and the delete
// pass.
func TestCheckConnectionNamesTheTaggingPermission(t *testing.T) {
	cfg := refusing(t, "dest-tags-test", func(r *http.Request) bool { return r.Header.Get("X-Amz-Tagging") != "" },
		`<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>not authorized to perform: s3:PutObjectTagging</Message></Error>`)
	d := account.Destination{Bucket: "dest-tags-test", Tags: map[string]string{"retention": "7y"}}
	checks, err := destination.CheckConnection(t.Context(), awsclient.NewS3(cfg), d.Bucket, "daybook/acct_a", "",
		destination.S3Attributes(d, "444455556666"), time.Unix(1, 0))
	if err == nil || !strings.Contains(err.Error(), "s3:PutObjectTagging") {
		t.Fatalf("the connection test with tagging refused: %v", err)
	}
	steps := map[string]destination.Check{}
	for _, c := range checks {
		steps[c.Step] = c
	}
	for _, step := range []string{"write a small object", "start and abort a multipart upload"} {
		if c := steps[step]; c.OK || !strings.Contains(c.Problem, "the role needs s3:PutObject, s3:PutObjectTagging") {
			t.Errorf("%s: %+v, want it refused naming the tagging permission", step, c)
		}
	}
	for _, step := range []string{"list the prefix", "list incomplete multipart uploads under the prefix", "delete the test object"} {
		if !steps[step].OK {
			t.Errorf("%s failed: %+v", step, steps[step])
		}
	}
}
