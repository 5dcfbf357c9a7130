package upload

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestS3AttributesOnEveryObject: an object sent whole (PutObject) and one
// sent in parts (CreateMultipartUpload) carry the same encryption (SSE-KMS
// with its key and a Bucket Key), canned ACL and tags.
func TestS3AttributesOnEveryObject(t *testing.T) {
	attrs := S3Attributes{ServerSideEncryption: types.ServerSideEncryptionAwsKms, KMSKeyID: "arn:aws:kms:us-east-1:111122223333:key/k1",
		ACL: types.ObjectCannedACLBucketOwnerFullControl, Tagging: "retention=7y"}
	f := newFake()
	small := NewWriter(t.Context(), f, "b", "small", Options{S3: attrs})
	if _, err := small.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := small.Close(); err != nil {
		t.Fatal(err)
	}
	big := NewWriter(t.Context(), f, "b", "big", Options{PartSize: MinPartSize, S3: attrs})
	if _, err := big.Write(make([]byte, MinPartSize+1)); err != nil {
		t.Fatal(err)
	}
	if err := big.Close(); err != nil {
		t.Fatal(err)
	}
	for _, got := range []struct {
		name         string
		sse          types.ServerSideEncryption
		key, tagging *string
		bucketKey    *bool
		acl          types.ObjectCannedACL
	}{
		{"PutObject", f.putIn.ServerSideEncryption, f.putIn.SSEKMSKeyId, f.putIn.Tagging, f.putIn.BucketKeyEnabled, f.putIn.ACL},
		{"CreateMultipartUpload", f.createIn.ServerSideEncryption, f.createIn.SSEKMSKeyId, f.createIn.Tagging, f.createIn.BucketKeyEnabled, f.createIn.ACL},
	} {
		if got.sse != attrs.ServerSideEncryption || aws.ToString(got.key) != attrs.KMSKeyID || !aws.ToBool(got.bucketKey) ||
			got.acl != attrs.ACL || aws.ToString(got.tagging) != attrs.Tagging {
			t.Errorf("%s sent %s %s bucket key %v, ACL %s, tags %q", got.name, got.sse, aws.ToString(got.key), aws.ToBool(got.bucketKey), got.acl, aws.ToString(got.tagging))
		}
	}
}
