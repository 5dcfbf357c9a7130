package buckettest

// Attrs are what daybook writes every object with besides its content, as
// the suite asks for them and reads them back: on S3 the encryption
// (AES256, or aws:kms with KMSKey and a bucket key), the canned ACL and the
// tags; on GCS the customer-managed key (KMSKey: kmsKeyName) and the tags
// (as metadata); on Azure the encryption scope (KMSKey) and the tags (blob
// index tags).
type Attrs struct {
	Encryption string
	KMSKey     string
	BucketKey  bool
	ACL        string
	Tags       map[string]string
}
