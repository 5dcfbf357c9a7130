package upload

import (
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// S3 multipart limits.
const (
	MiB = 1 << 20

	// MinPartSize is the smallest part S3 accepts for every part but the last.
	MinPartSize int64 = 5 * MiB
	// MaxPartSize is the largest part S3 accepts.
	MaxPartSize int64 = 5 << 30
	// MaxParts is the largest part number S3 accepts.
	MaxParts = 10000
	// DefaultPartSize is used when Options.PartSize is zero.
	DefaultPartSize int64 = 16 * MiB
	// DefaultConcurrency is used when Options.Concurrency is zero.
	DefaultConcurrency = 4
)

// AbortTimeout bounds the AbortMultipartUpload call made after a failure. It
// runs on a context detached from the caller's, which may already be done.
const AbortTimeout = 30 * time.Second

// ChecksumMode selects which CRC32C checksums are sent to the store. The
// Writer always computes CRC32C and SHA-256 of the stream for Result; the
// mode only changes what the store is asked to verify.
type ChecksumMode int

const (
	// ChecksumFullObject (the default) sends each part's CRC32C on
	// UploadPart and in CompleteMultipartUpload, creates the upload with
	// ChecksumType FULL_OBJECT and sends the whole object's CRC32C and size
	// on CompleteMultipartUpload, so S3 verifies every part and the
	// assembled object, and stores the object's plain CRC32C (the same value
	// a PutObject of the same bytes would show). PutObject carries the
	// object's CRC32C.
	ChecksumFullObject ChecksumMode = iota
	// ChecksumComposite sends per-part CRC32C only: S3 verifies each part and
	// stores a checksum-of-checksums ("xxxx-N"). For S3-compatible stores that
	// accept x-amz-checksum-crc32c but not x-amz-checksum-type.
	ChecksumComposite
	// ChecksumNone sends no checksum headers at all, for stores that reject
	// them. Transport integrity then rests on SigV4 payload signing / TLS.
	ChecksumNone
)

// Options configures a Writer. The zero value is usable.
type Options struct {
	// PartSize is the size of every part but the last. Zero means
	// DefaultPartSize; values are clamped to [MinPartSize, MaxPartSize] and
	// raised so that MaxObjectSize fits in MaxParts parts.
	PartSize int64
	// Concurrency is the maximum number of UploadPart calls in flight; Write
	// blocks when it is reached. Zero means DefaultConcurrency.
	Concurrency int
	// MaxObjectSize is the largest object the caller will write; it only
	// sizes parts (see PartSizeFor). Zero means unknown: a stream that needs
	// more than MaxParts parts then fails with ErrTooManyParts.
	MaxObjectSize int64
	// ExpectedBucketOwner, when set, is sent on every request (C1).
	ExpectedBucketOwner string
	// ContentType, ContentEncoding and Metadata are stored on the object.
	ContentType     string
	ContentEncoding string
	Metadata        map[string]string
	// Checksums selects what the store is asked to verify; see ChecksumMode.
	Checksums ChecksumMode
	// S3 are the attributes only S3 takes, sent with every object's first
	// request (PutObject or CreateMultipartUpload).
	S3 S3Attributes
}

// S3Attributes are what an S3 object is written with besides its content:
// how it is encrypted, who owns it, its tags.
type S3Attributes struct {
	// ServerSideEncryption is "" (the bucket's default), AES256 (SSE-S3) or
	// aws:kms (SSE-KMS with KMSKeyID, and an S3 Bucket Key).
	ServerSideEncryption types.ServerSideEncryption
	KMSKeyID             string
	// ACL is the canned ACL: bucket-owner-full-control, so that the bucket's
	// owner owns an object a writer from another account puts in a bucket
	// with ACLs enabled; "" sends none.
	ACL types.ObjectCannedACL
	// Tagging is the object's tags as a URL query (k1=v1&k2=v2); "" none.
	Tagging string
}

// bucketKey turns on an S3 Bucket Key with SSE-KMS: one data key per bucket
// for a while instead of a KMS call per object.
func (a S3Attributes) bucketKey() *bool {
	if a.ServerSideEncryption == types.ServerSideEncryptionAwsKms {
		return aws.Bool(true)
	}
	return nil
}

// Result describes a committed object.
type Result struct {
	Key   string
	Bytes int64
	// CRC32C is the Castagnoli CRC of the whole object, base64 of its
	// big-endian bytes: the form S3 shows in x-amz-checksum-crc32c.
	CRC32C string
	// CRC32CValue is the same checksum as a number.
	CRC32CValue uint32
	// SHA256 is the hex SHA-256 of the whole object.
	SHA256 string
	// Parts is the number of multipart parts, 0 when the object was sent
	// with a single PutObject.
	Parts int
	// ETag and VersionID are as S3 returned them (ETag quoted; VersionID
	// empty on an unversioned bucket).
	ETag      string
	VersionID string
}

var (
	// ErrAborted is the error Write and Close return after Abort.
	ErrAborted = errors.New("upload: aborted")
	// ErrClosed is returned by Write after Close.
	ErrClosed = errors.New("upload: write after close")
	// ErrTooManyParts is returned when the stream needs more than MaxParts
	// parts; set Options.MaxObjectSize to size parts for it.
	ErrTooManyParts = errors.New("upload: object needs more than 10000 parts")
)

// PartSizeFor returns the part size a Writer uses for the requested part size
// and maximum object size: partSize (DefaultPartSize when <= 0) clamped to
// [MinPartSize, MaxPartSize], raised to a whole MiB so that maxObjectSize fits
// in MaxParts parts.
func PartSizeFor(partSize, maxObjectSize int64) int64 {
	if partSize <= 0 {
		partSize = DefaultPartSize
	}
	partSize = max(partSize, MinPartSize)
	if maxObjectSize > 0 {
		need := (maxObjectSize + MaxParts - 1) / MaxParts
		if need > partSize {
			partSize = (need + MiB - 1) / MiB * MiB
		}
	}
	return min(partSize, MaxPartSize)
}
