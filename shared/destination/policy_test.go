package destination_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/destination"
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
		out = append(out, c.Permission)
	}
	return out
}
