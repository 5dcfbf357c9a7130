package destination_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/iamcheck"
	"github.com/daybook-dev/daybook/shared/upload"
)

// TestPolicyFor: the documents a customer pastes, exactly, for a role
// account on a bucket without a KMS key, with one, and with Glue tables.
func TestPolicyFor(t *testing.T) {
	d := account.Destination{Bucket: "acme-daybook", RoleARN: "arn:aws:iam::210987654321:role/daybook-export-acme", ExternalID: "daybook-x7"}
	g := destination.CustomerGrant{ExporterRole: "arn:aws:iam::123456789012:role/daybook-prod-ExporterFunctionRole-ABC", Prefix: "exports/acct_snpy7ipg3xax2iyk", Region: "eu-west-1"}
	trust := `{
  "Version": "2012-10-17",
  "Statement": [
    {
      "Sid": "DaybookExporter",
      "Effect": "Allow",
      "Principal": {
        "AWS": "arn:aws:iam::123456789012:role/daybook-prod-ExporterFunctionRole-ABC"
      },
      "Action": [
        "sts:AssumeRole"
      ],
      "Condition": {
        "StringEquals": {
          "sts:ExternalId": "daybook-x7"
        }
      }
    }
  ]
}`
	s3 := `[{"Sid":"DaybookObjects","Effect":"Allow","Action":["s3:PutObject","s3:GetObject","s3:DeleteObject","s3:AbortMultipartUpload"],"Resource":["arn:aws:s3:::acme-daybook/exports/acct_snpy7ipg3xax2iyk/*"]},` +
		`{"Sid":"DaybookListPrefix","Effect":"Allow","Action":["s3:ListBucket"],"Resource":["arn:aws:s3:::acme-daybook"],"Condition":{"StringLike":{"s3:prefix":["exports/acct_snpy7ipg3xax2iyk","exports/acct_snpy7ipg3xax2iyk/*"]}}},` +
		`{"Sid":"DaybookListUploads","Effect":"Allow","Action":["s3:ListBucketMultipartUploads"],"Resource":["arn:aws:s3:::acme-daybook"]}`
	key := "arn:aws:kms:eu-west-1:210987654321:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	glue := account.Destination{Bucket: d.Bucket, RoleARN: d.RoleARN, ExternalID: d.ExternalID, Region: "sa-east-1", Glue: &account.GlueTables{Database: "analytics", TablePrefix: "acme_"}}
	for _, tc := range []struct {
		name  string
		d     account.Destination
		key   string
		perms string
	}{
		{"a bucket without a KMS key", d, "", `{"Version":"2012-10-17","Statement":` + s3 + `]}`},
		{"a bucket encrypted with a KMS key", d, key, `{"Version":"2012-10-17","Statement":` + s3 +
			`,{"Sid":"DaybookBucketKey","Effect":"Allow","Action":["kms:GenerateDataKey","kms:Decrypt"],"Resource":["` + key + `"]}]}`},
		{"Glue tables in the bucket's region", glue, "", `{"Version":"2012-10-17","Statement":` + s3 +
			`,{"Sid":"DaybookGlueTables","Effect":"Allow","Action":["glue:GetTable","glue:CreateTable","glue:UpdateTable"],"Resource":["arn:aws:glue:sa-east-1:210987654321:catalog","arn:aws:glue:sa-east-1:210987654321:database/analytics","arn:aws:glue:sa-east-1:210987654321:table/analytics/acme_*"]}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gg := g
			gg.KMSKey = tc.key
			p, err := destination.PolicyFor(tc.d, gg)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Trust.JSON(); got != trust {
				t.Errorf("trust policy:\n%s\nwant\n%s", got, trust)
			}
			got, _ := json.Marshal(p.Permissions)
			if string(got) != tc.perms {
				t.Errorf("permissions policy:\n%s\nwant\n%s", got, tc.perms)
			}
		})
	}
	t.Run("the permissions cover every step of the connection test", func(t *testing.T) {
		p, _ := destination.PolicyFor(d, g)
		perms := p.Permissions.JSON()
		for _, ch := range checkPermissions(t) {
			if !strings.Contains(perms, `"`+ch+`"`) {
				t.Errorf("the connection test needs %s; the policy lacks it", ch)
			}
		}
	})
	// The tags and the ACL the role's writes carry add the actions IAM
	// authorizes them as, and only then.
	objects := func(actions ...string) string {
		b, _ := json.Marshal(actions)
		return `{"Sid":"DaybookObjects","Effect":"Allow","Action":` + string(b) + `,"Resource":["arn:aws:s3:::acme-daybook/exports/acct_snpy7ipg3xax2iyk/*"]}`
	}
	tags := map[string]string{"retention": "7y"}
	for _, tc := range []struct {
		name string
		d    account.Destination
		want string
	}{
		{"tags", account.Destination{Bucket: d.Bucket, RoleARN: d.RoleARN, ExternalID: d.ExternalID, Tags: tags},
			objects("s3:PutObject", "s3:PutObjectTagging", "s3:GetObject", "s3:DeleteObject", "s3:AbortMultipartUpload")},
		{"a bucket of another account", account.Destination{Bucket: d.Bucket, RoleARN: d.RoleARN, ExternalID: d.ExternalID, ExpectedBucketOwner: "777788889999"},
			objects("s3:PutObject", "s3:PutObjectAcl", "s3:GetObject", "s3:DeleteObject", "s3:AbortMultipartUpload")},
		{"tags in a bucket of another account", account.Destination{Bucket: d.Bucket, RoleARN: d.RoleARN, ExternalID: d.ExternalID, ExpectedBucketOwner: "777788889999", Tags: tags},
			objects("s3:PutObject", "s3:PutObjectTagging", "s3:PutObjectAcl", "s3:GetObject", "s3:DeleteObject", "s3:AbortMultipartUpload")},
		{"the bucket's own account named", account.Destination{Bucket: d.Bucket, RoleARN: d.RoleARN, ExternalID: d.ExternalID, ExpectedBucketOwner: "210987654321"},
			objects("s3:PutObject", "s3:GetObject", "s3:DeleteObject", "s3:AbortMultipartUpload")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := destination.PolicyFor(tc.d, g)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(p.Permissions.Statement[0])
			if string(got) != tc.want {
				t.Errorf("objects statement:\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		d    account.Destination
		g    destination.CustomerGrant
		want string
	}{
		{account.Destination{Bucket: "b", RoleARN: "role/x", ExternalID: "e"}, g, `destination.role_arn "role/x"`},
		{account.Destination{Bucket: "b", RoleARN: d.RoleARN}, g, "destination.external_id is empty"},
		{d, destination.CustomerGrant{Prefix: "p"}, `exporter role ""`},
		{d, destination.CustomerGrant{ExporterRole: g.ExporterRole, KMSKey: "alias/mine"}, `KMS key "alias/mine"`},
	} {
		if _, err := destination.PolicyFor(tc.d, tc.g); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("PolicyFor(%+v, %+v) = %v, want an error naming %s", tc.d, tc.g, err, tc.want)
		}
	}
}

// TestPolicyForAllowsTheWrites: the permissions policy PolicyFor prints
// allows every request a role sends writing the destination's objects as
// the exporter writes them (OpenS3: a small object in one PutObject, a
// large one in a multipart upload, each with the destination's tags and,
// in a bucket of another account than the role's, its ACL), each request
// authorized as iamcheck says IAM authorizes it, and it grants no tagging
// or ACL the writes do not need.
func TestPolicyForAllowsTheWrites(t *testing.T) {
	ctx := context.Background()
	cfg, err := srv.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	proxy, sent := buckettest.RecordingProxy(t, aws.ToString(cfg.BaseEndpoint))
	recorded := cfg.Copy()
	recorded.BaseEndpoint = aws.String(proxy.URL)
	api := awsclient.NewS3(recorded)
	// The deployment's template is read only to authorize the calls: the
	// statements they are evaluated against are PolicyFor's.
	pol := iamcheck.ForStage(t, "policyfor", nil)
	const role = "arn:aws:iam::210987654321:role/daybook-export-acme"
	g := destination.CustomerGrant{ExporterRole: "arn:aws:iam::123456789012:role/daybook-prod-ExporterFunctionRole-ABC", Prefix: "exports/acct_w"}
	tags := map[string]string{"retention": "7y", "cost-center": "data eng"}
	attrs := []string{"s3:PutObjectTagging", "s3:PutObjectAcl"}
	for i, tc := range []struct {
		name        string
		owner, tags bool // a bucket of another account; destination.tags
		needs       []string
	}{
		{"neither", false, false, nil},
		{"tags", false, true, attrs[:1]},
		{"a bucket of another account", true, false, attrs[1:]},
		{"tags in a bucket of another account", true, true, attrs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("policy-writes-%d", i)
			if _, err := awsclient.NewS3(cfg).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
				t.Fatal(err)
			}
			d := account.Destination{Bucket: name, RoleARN: role, ExternalID: "daybook-w"}
			owner := account.RoleAccountID(role)
			if tc.owner {
				d.ExpectedBucketOwner, owner = "777788889999", "777788889999"
			}
			if tc.tags {
				d.Tags = tags
			}
			p, err := destination.PolicyFor(d, g)
			if err != nil {
				t.Fatal(err)
			}
			sts := statements(t, p.Permissions)
			// The expected owner goes unsent: moto's one account owns the
			// bucket, and IAM's decision does not depend on it.
			b := destination.OpenS3(api, d, "", bucket.Options{})
			if err := b.Put(ctx, g.Prefix+"/v1/small.json", []byte("{}"), "application/json"); err != nil {
				t.Fatal(err)
			}
			w := b.NewWriter(ctx, g.Prefix+"/v1/large.parquet", upload.Options{PartSize: upload.MinPartSize})
			if _, err := w.Write(bytes.Repeat([]byte("x"), int(upload.MinPartSize)+1)); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			checked, ops := map[string]bool{}, map[string]bool{}
			for _, q := range sent.Matching(func(q buckettest.Request) bool { return strings.HasPrefix(q.URL.Path, "/"+name+"/") }) {
				c := iamcheck.Call{Method: q.Method, URL: q.URL, Header: q.Header}
				s, err := iamcheck.SignerOf(c)
				if err != nil {
					t.Fatal(err)
				}
				a, err := pol.Authorize(c, s, iamcheck.Names{BucketAccount: func(string) string { return owner }})
				if err != nil {
					t.Fatal(err)
				}
				ops[a.Operation] = true
				for _, ch := range a.Checks {
					checked[ch.Action] = true
					dec, err := iamcheck.Evaluate(sts, ch.Request)
					if err != nil {
						t.Fatal(err)
					}
					if !dec.Allowed {
						t.Errorf("%s: the permissions policy does not allow %s", a.Operation, ch.Request)
					}
				}
			}
			for _, op := range []string{"s3 PutObject", "s3 CreateMultipartUpload", "s3 UploadPart", "s3 CompleteMultipartUpload"} {
				if !ops[op] {
					t.Errorf("no %s was sent (sent: %v)", op, ops)
				}
			}
			granted := p.Permissions.JSON()
			for _, x := range attrs {
				needed := slices.Contains(tc.needs, x)
				if checked[x] != needed {
					t.Errorf("the writes needed %s: %v, want %v", x, checked[x], needed)
				}
				if strings.Contains(granted, `"`+x+`"`) != needed {
					t.Errorf("the policy grants %s: %v, want %v", x, !needed, needed)
				}
			}
		})
	}
}

// statements are a PolicyDocument's as iamcheck evaluates them.
func statements(t *testing.T, doc destination.PolicyDocument) []iamcheck.Statement {
	t.Helper()
	var out []iamcheck.Statement
	for _, s := range doc.Statement {
		st := iamcheck.Statement{ID: s.Sid, Effect: s.Effect, Actions: s.Action, Resources: s.Resource}
		for op, keys := range s.Condition {
			for key, v := range keys {
				c := iamcheck.Condition{Operator: op, Key: key}
				switch v := v.(type) {
				case string:
					c.Values = []string{v}
				case []string:
					c.Values = v
				default:
					t.Fatalf("statement %s: condition %s %s: %T", s.Sid, op, key, v)
				}
				st.Conditions = append(st.Conditions, c)
			}
		}
		out = append(out, st)
	}
	return out
}

// checkPermissions are the permissions CheckConnection's steps name, from a
// run on moto.
func checkPermissions(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	cfg, err := srv.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := awsclient.NewS3(cfg).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("dest-policy-test")}); err != nil {
		t.Fatal(err)
	}
	f := &destination.Clients{Base: cfg}
	checks, err := destination.CheckConnection(ctx, f.Client("acct_p", account.Destination{Bucket: "dest-policy-test"}), "dest-policy-test", "daybook/acct_p", "", upload.S3Attributes{}, time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	if err != nil || len(checks) == 0 {
		t.Fatalf("%v: %+v", err, checks)
	}
	var out []string
	for _, c := range checks {
		out = append(out, strings.Split(c.Permission, ", ")...)
	}
	return out
}
