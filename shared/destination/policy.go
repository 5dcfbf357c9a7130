package destination

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/arn"

	"github.com/daybook-dev/daybook/shared/account"
)

// What a customer grants daybook, written out: the trust policy of the
// role daybook assumes in the customer's account and the permissions
// policy that role needs on the account's bucket and prefix, as IAM JSON
// documents ready to paste (the console, `aws iam create-role
// --assume-role-policy-document`, `put-role-policy`). The permissions are
// exactly what an export, its commit, the account test and verify call:
// every action CheckConnection names, the Glue and KMS actions when the
// destination uses them, and the actions IAM authorizes for the attributes
// every object is written with (S3Attributes): s3:PutObjectTagging when
// the destination sets tags, s3:PutObjectAcl when the ACL is sent.

// PolicyDocument is an IAM policy document.
type PolicyDocument struct {
	Version   string            `json:"Version"`
	Statement []PolicyStatement `json:"Statement"`
}

// PolicyStatement is one statement of a PolicyDocument, its fields in the
// order IAM's own examples use.
type PolicyStatement struct {
	Sid       string                    `json:"Sid"`
	Effect    string                    `json:"Effect"`
	Principal map[string]string         `json:"Principal,omitempty"`
	Action    []string                  `json:"Action"`
	Resource  []string                  `json:"Resource,omitempty"`
	Condition map[string]map[string]any `json:"Condition,omitempty"`
}

// CustomerGrant is what the generator needs besides the destination: who
// assumes the role and where the account's objects are.
type CustomerGrant struct {
	// ExporterRole is the ARN of daybook's exporter role (the stack output
	// ExporterRoleArn), the principal the trust policy names.
	ExporterRole string
	// Prefix is the account's rendered prefix (account.Prefix), the part
	// of every key before /v1/.
	Prefix string
	// Region is the bucket's region when the destination names none (the
	// deployment's), for the Glue resources.
	Region string
	// KMSKey is the ARN of the KMS key the bucket encrypts objects with by
	// default (SSE-KMS), if any: writing and reading then need
	// kms:GenerateDataKey and kms:Decrypt on it.
	KMSKey string
}

// CustomerPolicies are the two documents of a customer role.
type CustomerPolicies struct {
	Trust       PolicyDocument `json:"trust_policy"`
	Permissions PolicyDocument `json:"permissions_policy"`
}

// PolicyFor writes the trust and permissions policies of d's role: the
// role trusts g.ExporterRole with d's external id, and may write, read,
// list and delete under the account's prefix of d's bucket (and, with Glue
// tables or a KMS key, use those). Where d's objects are written with tags
// or with bucket-owner-full-control, it may also set those on the objects
// it writes. d must name a role and an external id.
func PolicyFor(d account.Destination, g CustomerGrant) (CustomerPolicies, error) {
	role, err := arn.Parse(d.RoleARN)
	if err != nil {
		return CustomerPolicies{}, fmt.Errorf("destination.role_arn %q: %w", d.RoleARN, err)
	}
	if d.ExternalID == "" {
		return CustomerPolicies{}, fmt.Errorf("destination.external_id is empty: the trust policy's condition needs it")
	}
	if _, err := arn.Parse(g.ExporterRole); err != nil {
		return CustomerPolicies{}, fmt.Errorf("exporter role %q: %w", g.ExporterRole, err)
	}
	if g.KMSKey != "" {
		if k, err := arn.Parse(g.KMSKey); err != nil || k.Service != "kms" {
			return CustomerPolicies{}, fmt.Errorf("KMS key %q: want a key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID)", g.KMSKey)
		}
	}
	p := role.Partition
	prefix := strings.Trim(g.Prefix, "/")
	bucket := "arn:" + p + ":s3:::" + d.Bucket
	trust := PolicyDocument{Version: "2012-10-17", Statement: []PolicyStatement{{
		Sid: "DaybookExporter", Effect: "Allow",
		Principal: map[string]string{"AWS": g.ExporterRole},
		Action:    []string{"sts:AssumeRole"},
		Condition: map[string]map[string]any{"StringEquals": {"sts:ExternalId": d.ExternalID}},
	}}}
	// Every PutObject and CreateMultipartUpload of the role carries d's
	// attributes (WriteActions). What the role sends does not depend on the
	// deployment's account (the writer is the role's account, the owner
	// expected_bucket_owner or the role's account), so none is passed.
	objects := append(WriteActions(S3Attributes(d, "")), "s3:GetObject", "s3:DeleteObject", "s3:AbortMultipartUpload")
	perms := PolicyDocument{Version: "2012-10-17", Statement: []PolicyStatement{
		{
			Sid: "DaybookObjects", Effect: "Allow",
			Action:   objects,
			Resource: []string{bucket + "/" + prefix + "/*"},
		},
		{
			Sid: "DaybookListPrefix", Effect: "Allow",
			Action:    []string{"s3:ListBucket"},
			Resource:  []string{bucket},
			Condition: map[string]map[string]any{"StringLike": {"s3:prefix": []string{prefix, prefix + "/*"}}},
		},
		{
			// ListBucketMultipartUploads takes no s3:prefix condition; daybook
			// lists the uploads under the account's prefix only.
			Sid: "DaybookListUploads", Effect: "Allow",
			Action:   []string{"s3:ListBucketMultipartUploads"},
			Resource: []string{bucket},
		},
	}}
	if d.Glue != nil {
		at := "arn:" + p + ":glue:" + cmp.Or(d.Region, g.Region) + ":" + role.AccountID + ":"
		perms.Statement = append(perms.Statement, PolicyStatement{
			Sid: "DaybookGlueTables", Effect: "Allow",
			Action: []string{"glue:GetTable", "glue:CreateTable", "glue:UpdateTable"},
			Resource: []string{at + "catalog", at + "database/" + d.Glue.Database,
				at + "table/" + d.Glue.Database + "/" + d.Glue.TablePrefix + "*"},
		})
	}
	if g.KMSKey != "" {
		perms.Statement = append(perms.Statement, PolicyStatement{
			Sid: "DaybookBucketKey", Effect: "Allow",
			Action:   []string{"kms:GenerateDataKey", "kms:Decrypt"},
			Resource: []string{g.KMSKey},
		})
	}
	return CustomerPolicies{Trust: trust, Permissions: perms}, nil
}

// JSON is the document indented for pasting.
func (d PolicyDocument) JSON() string {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		panic(err) // strings, lists and maps of strings only
	}
	return string(b)
}
