package upload

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// The calls that start and end an upload: CreateMultipartUpload,
// CompleteMultipartUpload, and PutObject for an object smaller than a part.

func (w *Writer) create() error {
	in := &s3.CreateMultipartUploadInput{
		Bucket:              &w.bucket,
		Key:                 &w.key,
		ExpectedBucketOwner: w.owner,
		Metadata:            w.opts.Metadata,
	}
	if w.opts.ContentType != "" {
		in.ContentType = &w.opts.ContentType
	}
	if w.opts.ContentEncoding != "" {
		in.ContentEncoding = &w.opts.ContentEncoding
	}
	switch w.opts.Checksums {
	case ChecksumFullObject:
		in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32c
		in.ChecksumType = types.ChecksumTypeFullObject
	case ChecksumComposite:
		in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32c
	}
	out, err := w.api.CreateMultipartUpload(w.ctx, in)
	if err != nil {
		return fmt.Errorf("upload: create multipart upload of s3://%s/%s: %w", w.bucket, w.key, err)
	}
	if out.UploadId == nil || *out.UploadId == "" {
		return fmt.Errorf("upload: create multipart upload of s3://%s/%s: no upload id", w.bucket, w.key)
	}
	w.mu.Lock()
	w.uploadID = out.UploadId
	w.mu.Unlock()
	return nil
}

func (w *Writer) putObject() error {
	var body io.ReadSeeker = bytes.NewReader(nil)
	var pb *partBody
	if w.buf != nil {
		w.sha.Write(w.buf.b[:w.fill]) // the only part: none was handed off
		pb = newPartBody(w.buf, w.fill)
		body = pb
	}
	in := &s3.PutObjectInput{
		Bucket:              &w.bucket,
		Key:                 &w.key,
		Body:                body,
		ContentLength:       aws.Int64(int64(w.fill)),
		ExpectedBucketOwner: w.owner,
		Metadata:            w.opts.Metadata,
	}
	if w.opts.ContentType != "" {
		in.ContentType = &w.opts.ContentType
	}
	if w.opts.ContentEncoding != "" {
		in.ContentEncoding = &w.opts.ContentEncoding
	}
	w.crc = crc32cCombine(w.crc, w.partCRC, int64(w.fill)) // w.crc was 0
	if w.opts.Checksums != ChecksumNone {
		in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32c
		in.ChecksumCRC32C = aws.String(crcBase64(w.crc))
	}
	out, err := w.api.PutObject(w.ctx, in)
	if err != nil {
		if pb != nil {
			pb.abandon(w.arena) // see startPart
			w.buf = nil
		}
		return fmt.Errorf("upload: put s3://%s/%s: %w", w.bucket, w.key, err)
	}
	w.setResult(0, out.ETag, out.VersionId)
	return nil
}

// complete sends the last part, waits for all parts and completes.
func (w *Writer) complete() error {
	// The buffer is never empty here: a full part is only sent once more
	// data follows it.
	select {
	case w.sem <- struct{}{}:
	case <-w.ctx.Done():
		return w.check()
	}
	w.startPart()
	w.wg.Wait()
	if err := w.check(); err != nil {
		return err
	}
	w.mu.Lock()
	parts := w.parts
	w.mu.Unlock()
	in := &s3.CompleteMultipartUploadInput{
		Bucket:              &w.bucket,
		Key:                 &w.key,
		UploadId:            w.uploadID,
		MultipartUpload:     &types.CompletedMultipartUpload{Parts: parts},
		ExpectedBucketOwner: w.owner,
	}
	if w.opts.Checksums == ChecksumFullObject {
		in.ChecksumType = types.ChecksumTypeFullObject
		in.ChecksumCRC32C = aws.String(crcBase64(w.crc))
		in.MpuObjectSize = aws.Int64(w.written.Load())
	}
	out, err := w.api.CompleteMultipartUpload(w.ctx, in)
	if err != nil {
		return fmt.Errorf("upload: complete multipart upload of s3://%s/%s: %w", w.bucket, w.key, err)
	}
	w.setResult(len(parts), out.ETag, out.VersionId)
	return nil
}

func (w *Writer) setResult(parts int, etag, version *string) {
	w.result = Result{
		Key:         w.key,
		Bytes:       w.written.Load(),
		CRC32C:      crcBase64(w.crc),
		CRC32CValue: w.crc,
		SHA256:      hex.EncodeToString(w.sha.Sum(nil)),
		Parts:       parts,
		ETag:        aws.ToString(etag),
		VersionID:   aws.ToString(version),
	}
}

func crcBase64(v uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return base64.StdEncoding.EncodeToString(b[:])
}
