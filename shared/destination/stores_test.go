package destination

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/daybook-dev/daybook/shared/account"
)

// TestS3Attributes: the encryption of every object, its tags as S3's query,
// and bucket-owner-full-control exactly when the writer's account is not
// the bucket's owner.
func TestS3Attributes(t *testing.T) {
	const deployment = "111122223333"
	role := "arn:aws:iam::444455556666:role/daybook-export-acme"
	for _, tc := range []struct {
		name string
		d    account.Destination
		sse  types.ServerSideEncryption
		key  string
		acl  types.ObjectCannedACL
		tags string
	}{
		{"own role, own bucket", account.Destination{Bucket: "b"}, "", "", "", ""},
		{"customer role in the bucket's account", account.Destination{Bucket: "b", RoleARN: role, ExternalID: "x"}, "", "", "", ""},
		{"customer role in another account", account.Destination{Bucket: "b", RoleARN: role, ExternalID: "x", ExpectedBucketOwner: "777788889999"},
			"", "", types.ObjectCannedACLBucketOwnerFullControl, ""},
		{"a custom endpoint has no AWS owner", account.Destination{Bucket: "b", Endpoint: "https://minio.example", ExpectedBucketOwner: "777788889999"},
			"", "", "", ""},
		{"SSE-KMS", account.Destination{Bucket: "b", Encryption: &account.Encryption{KMSKey: "arn:aws:kms:us-east-1:111122223333:key/k"}},
			types.ServerSideEncryptionAwsKms, "arn:aws:kms:us-east-1:111122223333:key/k", "", ""},
		{"SSE-S3", account.Destination{Bucket: "b", Encryption: &account.Encryption{Type: account.EncryptionSSES3}}, types.ServerSideEncryptionAes256, "", "", ""},
		{"tags", account.Destination{Bucket: "b", Tags: map[string]string{"team": "data eng", "retention": "7y", "a+b": "c=d&e"}},
			"", "", "", "a%2Bb=c%3Dd%26e&retention=7y&team=data%20eng"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := S3Attributes(tc.d, deployment)
			if a.ServerSideEncryption != tc.sse || a.KMSKeyID != tc.key || a.ACL != tc.acl || a.Tagging != tc.tags {
				t.Errorf("S3Attributes = %+v, want %s %q %s %q", a, tc.sse, tc.key, tc.acl, tc.tags)
			}
		})
	}
}
