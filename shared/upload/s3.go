package upload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// S3API is the subset of *s3.Client a Writer uses.
type S3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error)
	UploadPart(ctx context.Context, in *s3.UploadPartInput, optFns ...func(*s3.Options)) (*s3.UploadPartOutput, error)
	CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error)
	AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
}

var _ S3API = (*s3.Client)(nil)

// s3Protocol is S3's multipart upload: CreateMultipartUpload, UploadPart
// with each part's CRC32C, CompleteMultipartUpload (with the full-object
// CRC32C and size under ChecksumFullObject), AbortMultipartUpload; an
// object of one part is one PutObject carrying its CRC32C.
type s3Protocol struct {
	api    S3API
	bucket string
	key    string
	opts   Options
	owner  *string

	mu       sync.Mutex
	uploadID *string
	parts    []types.CompletedPart // index = part number - 1
}

var _ Protocol = (*s3Protocol)(nil)

// S3Protocol is S3's multipart upload of s3://bucket/key with opts' S3
// attributes, expected bucket owner and checksums.
func S3Protocol(api S3API, bucket, key string, opts Options) Protocol {
	return newS3Protocol(api, bucket, key, opts)
}

func newS3Protocol(api S3API, bucket, key string, opts Options) *s3Protocol {
	p := &s3Protocol{api: api, bucket: bucket, key: key, opts: opts}
	if opts.ExpectedBucketOwner != "" {
		p.owner = aws.String(opts.ExpectedBucketOwner)
	}
	return p
}

func (p *s3Protocol) Where() string { return "s3://" + p.bucket + "/" + p.key }

func (p *s3Protocol) Put(ctx context.Context, body io.ReadSeeker, size int64, crc uint32) (Committed, error) {
	in := &s3.PutObjectInput{
		Bucket:               &p.bucket,
		Key:                  &p.key,
		Body:                 body,
		ContentLength:        aws.Int64(size),
		ExpectedBucketOwner:  p.owner,
		Metadata:             p.opts.Metadata,
		ServerSideEncryption: p.opts.S3.ServerSideEncryption,
		SSEKMSKeyId:          optional(p.opts.S3.KMSKeyID),
		BucketKeyEnabled:     p.opts.S3.bucketKey(),
		ACL:                  p.opts.S3.ACL,
		Tagging:              optional(p.opts.S3.Tagging),
	}
	if p.opts.ContentType != "" {
		in.ContentType = &p.opts.ContentType
	}
	if p.opts.ContentEncoding != "" {
		in.ContentEncoding = &p.opts.ContentEncoding
	}
	if p.opts.Checksums != ChecksumNone {
		in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32c
		in.ChecksumCRC32C = aws.String(crcBase64(crc))
	}
	out, err := p.api.PutObject(ctx, in)
	if err != nil {
		return Committed{}, err
	}
	return Committed{Key: p.key, ETag: aws.ToString(out.ETag), VersionID: aws.ToString(out.VersionId)}, nil
}

func (p *s3Protocol) Start(ctx context.Context) error {
	in := &s3.CreateMultipartUploadInput{
		Bucket:               &p.bucket,
		Key:                  &p.key,
		ExpectedBucketOwner:  p.owner,
		Metadata:             p.opts.Metadata,
		ServerSideEncryption: p.opts.S3.ServerSideEncryption,
		SSEKMSKeyId:          optional(p.opts.S3.KMSKeyID),
		BucketKeyEnabled:     p.opts.S3.bucketKey(),
		ACL:                  p.opts.S3.ACL,
		Tagging:              optional(p.opts.S3.Tagging),
	}
	if p.opts.ContentType != "" {
		in.ContentType = &p.opts.ContentType
	}
	if p.opts.ContentEncoding != "" {
		in.ContentEncoding = &p.opts.ContentEncoding
	}
	switch p.opts.Checksums {
	case ChecksumFullObject:
		in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32c
		in.ChecksumType = types.ChecksumTypeFullObject
	case ChecksumComposite:
		in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32c
	}
	out, err := p.api.CreateMultipartUpload(ctx, in)
	if err != nil {
		return fmt.Errorf("create multipart upload: %w", err)
	}
	if out.UploadId == nil || *out.UploadId == "" {
		return errors.New("create multipart upload: no upload id")
	}
	p.mu.Lock()
	p.uploadID = out.UploadId
	p.mu.Unlock()
	return nil
}

func (p *s3Protocol) Part(ctx context.Context, num int32, body io.ReadSeeker, size int64, crc uint32) error {
	p.mu.Lock()
	id := p.uploadID
	p.mu.Unlock()
	in := &s3.UploadPartInput{
		Bucket:              &p.bucket,
		Key:                 &p.key,
		UploadId:            id,
		PartNumber:          aws.Int32(num),
		Body:                body,
		ContentLength:       aws.Int64(size),
		ExpectedBucketOwner: p.owner,
	}
	var sum *string
	if p.opts.Checksums != ChecksumNone {
		sum = aws.String(crcBase64(crc))
		in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32c
		in.ChecksumCRC32C = sum
	}
	out, err := p.api.UploadPart(ctx, in)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for int32(len(p.parts)) < num {
		p.parts = append(p.parts, types.CompletedPart{PartNumber: aws.Int32(int32(len(p.parts)) + 1)})
	}
	part := &p.parts[num-1]
	part.ETag = out.ETag
	part.ChecksumCRC32C = sum
	return nil
}

func (p *s3Protocol) Complete(ctx context.Context, parts int32, size int64, crc uint32) (Committed, error) {
	p.mu.Lock()
	if int32(len(p.parts)) != parts {
		p.mu.Unlock()
		return Committed{}, fmt.Errorf("complete multipart upload: %d parts uploaded, want %d", len(p.parts), parts)
	}
	in := &s3.CompleteMultipartUploadInput{
		Bucket:              &p.bucket,
		Key:                 &p.key,
		UploadId:            p.uploadID,
		MultipartUpload:     &types.CompletedMultipartUpload{Parts: p.parts},
		ExpectedBucketOwner: p.owner,
	}
	p.mu.Unlock()
	if p.opts.Checksums == ChecksumFullObject {
		in.ChecksumType = types.ChecksumTypeFullObject
		in.ChecksumCRC32C = aws.String(crcBase64(crc))
		in.MpuObjectSize = aws.Int64(size)
	}
	out, err := p.api.CompleteMultipartUpload(ctx, in)
	if err != nil {
		return Committed{}, fmt.Errorf("complete multipart upload: %w", err)
	}
	return Committed{Key: p.key, ETag: aws.ToString(out.ETag), VersionID: aws.ToString(out.VersionId)}, nil
}

func (p *s3Protocol) Abort(ctx context.Context) error {
	p.mu.Lock()
	id := p.uploadID
	p.mu.Unlock()
	_, err := p.api.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket:              &p.bucket,
		Key:                 &p.key,
		UploadId:            id,
		ExpectedBucketOwner: p.owner,
	})
	if err != nil {
		return fmt.Errorf("abort multipart upload: %w", err)
	}
	return nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
