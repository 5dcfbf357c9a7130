package buckettest

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// s3Inspector sees an S3 store through its API.
type s3Inspector struct {
	store     Store
	name      string
	byKeyOnly bool
}

var _ Inspector = (*s3Inspector)(nil)

// TagLister is the store's GetObjectTagging, where the store has it (moto,
// MinIO; the Fake keeps no tags).
type TagLister interface {
	GetObjectTagging(ctx context.Context, in *s3.GetObjectTaggingInput, optFns ...func(*s3.Options)) (*s3.GetObjectTaggingOutput, error)
}

func (i *s3Inspector) Object(ctx context.Context, key string) (Stored, bool, error) {
	out, err := i.store.GetObject(ctx, &s3.GetObjectInput{Bucket: &i.name, Key: &key})
	var nsk *types.NoSuchKey
	if errors.As(err, &nsk) {
		return Stored{}, false, nil
	}
	if err != nil {
		return Stored{}, false, err
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return Stored{}, false, err
	}
	md := map[string]string{}
	for k, v := range out.Metadata {
		md[strings.ToLower(k)] = v
	}
	s := Stored{Data: data, ContentType: aws.ToString(out.ContentType), ContentEncoding: aws.ToString(out.ContentEncoding),
		Metadata: md, ETag: aws.ToString(out.ETag)}
	if head, err := i.store.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &i.name, Key: &key, ChecksumMode: types.ChecksumModeEnabled}); err == nil {
		s.CRC32C, s.ChecksumType = aws.ToString(head.ChecksumCRC32C), string(head.ChecksumType)
		s.Attrs.Encryption = string(head.ServerSideEncryption)
		s.Attrs.KMSKey = aws.ToString(head.SSEKMSKeyId)
		s.Attrs.BucketKey = aws.ToBool(head.BucketKeyEnabled)
	}
	if tl, ok := i.store.(TagLister); ok {
		if tags, err := tl.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: &i.name, Key: &key}); err == nil && len(tags.TagSet) > 0 {
			s.Attrs.Tags = map[string]string{}
			for _, t := range tags.TagSet {
				s.Attrs.Tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
		}
	}
	return s, true, nil
}

func (i *s3Inspector) Keys(ctx context.Context) ([]string, error) {
	var out []string
	p := s3.NewListObjectsV2Paginator(i.store, &s3.ListObjectsV2Input{Bucket: &i.name})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			out = append(out, aws.ToString(o.Key))
		}
	}
	return out, nil
}

func (i *s3Inspector) OpenUploads(ctx context.Context, byKey ...string) ([]string, error) {
	seen := map[string]bool{}
	var open []string
	prefixes := []string{""}
	if i.byKeyOnly {
		prefixes = append(prefixes, byKey...)
	}
	for _, prefix := range prefixes {
		in := &s3.ListMultipartUploadsInput{Bucket: &i.name, Prefix: &prefix}
		for {
			out, err := i.store.ListMultipartUploads(ctx, in)
			if err != nil {
				return nil, err
			}
			for _, u := range out.Uploads {
				if id := aws.ToString(u.UploadId); !seen[id] && (prefix == "" || aws.ToString(u.Key) == prefix) {
					seen[id] = true
					open = append(open, aws.ToString(u.Key))
				}
			}
			if !aws.ToBool(out.IsTruncated) {
				break
			}
			in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
		}
	}
	return open, nil
}

func (i *s3Inspector) StartUpload(ctx context.Context, key string) error {
	_, err := i.store.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &i.name, Key: aws.String(key)})
	return err
}

func (i *s3Inspector) Parts(ctx context.Context, key, uploadID string) ([]int64, error) {
	out, err := i.store.ListParts(ctx, &s3.ListPartsInput{Bucket: &i.name, Key: &key, UploadId: &uploadID})
	if err != nil {
		return nil, err
	}
	sizes := make([]int64, len(out.Parts))
	for j, p := range out.Parts {
		if aws.ToInt32(p.PartNumber) != int32(j+1) {
			return nil, errors.New("parts listed out of order")
		}
		sizes[j] = aws.ToInt64(p.Size)
	}
	return sizes, nil
}

// WrongChecksums: a wrong CRC32C at each place a Writer sends one: a
// PutObject, an UploadPart, and the full-object checksum of
// CompleteMultipartUpload.
func (i *s3Inspector) WrongChecksums() []WrongChecksum {
	create := func(ctx context.Context, key string) (string, error) {
		out, err := i.store.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &i.name, Key: &key,
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c, ChecksumType: types.ChecksumTypeFullObject})
		if err != nil {
			return "", err
		}
		return aws.ToString(out.UploadId), nil
	}
	// cleanup aborts what an unverified upload left open.
	abortAll := func(ctx context.Context, key string) {
		out, err := i.store.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &i.name, Prefix: &key})
		if err != nil {
			return
		}
		for _, u := range out.Uploads {
			if aws.ToString(u.Key) == key {
				_, _ = i.store.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &i.name, Key: u.Key, UploadId: u.UploadId})
			}
		}
	}
	sums := func(data []byte) (good, bad string) {
		c := crc32.Checksum(data, castagnoli)
		return crcBase64(c), crcBase64(c ^ 1)
	}
	return []WrongChecksum{
		{Name: "PutObject", Send: func(ctx context.Context, key string, data []byte) error {
			_, bad := sums(data)
			_, err := i.store.PutObject(ctx, &s3.PutObjectInput{Bucket: &i.name, Key: &key, Body: bytes.NewReader(data),
				ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c, ChecksumCRC32C: &bad})
			return err
		}},
		{Name: "UploadPart", Send: func(ctx context.Context, key string, data []byte) error {
			_, bad := sums(data)
			id, err := create(ctx, key)
			if err != nil {
				return err
			}
			defer abortAll(context.WithoutCancel(ctx), key)
			out, err := i.store.UploadPart(ctx, &s3.UploadPartInput{Bucket: &i.name, Key: &key, UploadId: &id, PartNumber: aws.Int32(1),
				Body: bytes.NewReader(data), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c, ChecksumCRC32C: &bad})
			if err == nil { // not verified: complete it, to see what was stored
				_, err = i.store.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &i.name, Key: &key, UploadId: &id,
					MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: out.ETag, ChecksumCRC32C: &bad}}}})
			}
			return err
		}},
		{Name: "CompleteMultipartUpload full object", Send: func(ctx context.Context, key string, data []byte) error {
			good, bad := sums(data)
			id, err := create(ctx, key)
			if err != nil {
				return err
			}
			defer abortAll(context.WithoutCancel(ctx), key)
			out, err := i.store.UploadPart(ctx, &s3.UploadPartInput{Bucket: &i.name, Key: &key, UploadId: &id, PartNumber: aws.Int32(1),
				Body: bytes.NewReader(data), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c, ChecksumCRC32C: &good})
			if err != nil {
				return errors.Join(errors.New("UploadPart with the right checksum"), err)
			}
			_, err = i.store.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &i.name, Key: &key, UploadId: &id,
				ChecksumType: types.ChecksumTypeFullObject, ChecksumCRC32C: &bad, MpuObjectSize: aws.Int64(int64(len(data))),
				MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: out.ETag, ChecksumCRC32C: &good}}}})
			return err
		}},
	}
}

// Sent: an S3 backend records no requests; moto and MinIO keep what they
// are sent.
func (i *s3Inspector) Sent(string) (Attrs, bool) { return Attrs{}, false }
