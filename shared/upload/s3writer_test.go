package upload

import "context"

// NewWriter is a Writer for s3://bucket/key, as a Bucket's S3 driver makes
// one, for this package's tests.
func NewWriter(ctx context.Context, api S3API, bucket, key string, opts Options) *Writer {
	return NewWriterFor(ctx, newS3Protocol(api, bucket, key, opts), opts)
}
