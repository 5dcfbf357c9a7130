package buckettest

import (
	"bytes"
	"hash/crc32"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/daybook-dev/daybook/shared/bucket"
)

// testChecksumVerified sends a wrong CRC32C, straight to the store, at each
// place a Writer sends one: a PutObject, an UploadPart, and the full-object
// checksum of CompleteMultipartUpload. A store that verifies checksums
// refuses each and stores nothing; one that does not (moto) stores what it
// was sent, which is why the suite recomputes checksums itself (checkResult).
func testChecksumVerified(t *testing.T, nb func(*testing.T) Backend) {
	data := randomBytes(int(minPart)+10, 31)
	good := crcBase64(crc32.Checksum(data, castagnoli))
	bad := crcBase64(crc32.Checksum(data, castagnoli) ^ 1)
	for _, tc := range []struct {
		name string
		// send makes the calls with the wrong checksum and returns the
		// error of the call that carried it.
		send func(h *harness, key string) error
	}{
		{"PutObject", func(h *harness, key string) error {
			_, err := h.store.PutObject(h.ctx, &s3.PutObjectInput{Bucket: &h.name, Key: &key, Body: bytes.NewReader(data),
				ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c, ChecksumCRC32C: &bad})
			return err
		}},
		{"UploadPart", func(h *harness, key string) error {
			id := h.create(key)
			out, err := h.store.UploadPart(h.ctx, &s3.UploadPartInput{Bucket: &h.name, Key: &key, UploadId: &id, PartNumber: aws.Int32(1),
				Body: bytes.NewReader(data), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c, ChecksumCRC32C: &bad})
			if err == nil { // not verified: complete it, to see what was stored
				_, err = h.store.CompleteMultipartUpload(h.ctx, &s3.CompleteMultipartUploadInput{Bucket: &h.name, Key: &key, UploadId: &id,
					MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: out.ETag, ChecksumCRC32C: &bad}}}})
			}
			return err
		}},
		{"CompleteMultipartUpload full object", func(h *harness, key string) error {
			id := h.create(key)
			out, err := h.store.UploadPart(h.ctx, &s3.UploadPartInput{Bucket: &h.name, Key: &key, UploadId: &id, PartNumber: aws.Int32(1),
				Body: bytes.NewReader(data), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c, ChecksumCRC32C: &good})
			if err != nil {
				h.t.Fatalf("UploadPart with the right checksum: %v", err)
			}
			_, err = h.store.CompleteMultipartUpload(h.ctx, &s3.CompleteMultipartUploadInput{Bucket: &h.name, Key: &key, UploadId: &id,
				ChecksumType: types.ChecksumTypeFullObject, ChecksumCRC32C: &bad, MpuObjectSize: aws.Int64(int64(len(data))),
				MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: out.ETag, ChecksumCRC32C: &good}}}})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nb, bucket.Options{})
			const key = "wrong-checksum"
			err := tc.send(h, key)
			if !h.be.VerifiesChecksums {
				if err != nil {
					t.Fatalf("a store that does not verify checksums refused: %v", err)
				}
				got, _ := h.stored(key)
				equalBytes(t, key, got, data)
				return
			}
			if err == nil {
				t.Fatal("a wrong CRC32C was accepted")
			}
			t.Logf("refused: %v", err)
			h.absent(key)
			for _, id := range h.openUploadIDs(key) {
				_, _ = h.store.AbortMultipartUpload(h.ctx, &s3.AbortMultipartUploadInput{Bucket: &h.name, Key: aws.String(key), UploadId: &id})
			}
		})
	}
}

// create starts a full-object CRC32C multipart upload of key, as a Writer
// does, and returns its id.
func (h *harness) create(key string) string {
	h.t.Helper()
	out, err := h.store.CreateMultipartUpload(h.ctx, &s3.CreateMultipartUploadInput{Bucket: &h.name, Key: &key,
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c, ChecksumType: types.ChecksumTypeFullObject})
	if err != nil {
		h.t.Fatal(err)
	}
	return aws.ToString(out.UploadId)
}

// openUploadIDs lists the ids of key's incomplete uploads.
func (h *harness) openUploadIDs(key string) []string {
	h.t.Helper()
	out, err := h.store.ListMultipartUploads(h.ctx, &s3.ListMultipartUploadsInput{Bucket: &h.name, Prefix: &key})
	if err != nil {
		h.t.Fatal(err)
	}
	var ids []string
	for _, u := range out.Uploads {
		if aws.ToString(u.Key) == key {
			ids = append(ids, aws.ToString(u.UploadId))
		}
	}
	return ids
}
