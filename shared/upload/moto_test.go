package upload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/daybook-dev/daybook/shared/awsclient"
)

var bucketSeq atomic.Int64

// motoBucket returns a client for the test server and a fresh bucket.
func motoBucket(t *testing.T) (*s3.Client, string) {
	t.Helper()
	ctx := t.Context()
	cfg, err := srv.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := awsclient.NewS3(cfg)
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	bucket := fmt.Sprintf("upload-%d-%s", bucketSeq.Add(1), name)
	bucket = strings.TrimRight(bucket[:min(len(bucket), 63)], "-")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	return c, bucket
}

func getObject(t *testing.T, c *s3.Client, bucket, key string) ([]byte, *s3.GetObjectOutput) {
	t.Helper()
	out, err := c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b, out
}

func checkStored(t *testing.T, r Result, stored []byte) {
	t.Helper()
	// moto does not verify checksums: recompute from the stored bytes.
	if want := crc32.Checksum(stored, crc32.MakeTable(crc32.Castagnoli)); r.CRC32CValue != want || r.CRC32C != crcBase64(want) {
		t.Errorf("Result CRC32C %s, stored bytes have %s", r.CRC32C, crcBase64(want))
	}
	checkResult(t, r, stored, r.Parts)
}

func TestMotoSmallObject(t *testing.T) {
	c, bucket := motoBucket(t)
	data := randomBytes(300<<10, 21)
	w := NewWriter(t.Context(), c, bucket, "acct/events/dt=2026-01-02/part-00000.parquet", Options{
		ContentType: "application/vnd.apache.parquet",
		Metadata:    map[string]string{"generation": "7"},
		// moto ignores the header; the fake checks it is sent.
		ExpectedBucketOwner: "123456789012",
	})
	if err := writeChunks(t, w, data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := w.Result()
	stored, out := getObject(t, c, bucket, r.Key)
	if !bytes.Equal(stored, data) {
		t.Fatal("stored object differs")
	}
	checkStored(t, r, stored)
	if r.Parts != 0 || r.ETag == "" || r.ETag != aws.ToString(out.ETag) {
		t.Fatalf("Result %+v, stored ETag %v", r, aws.ToString(out.ETag))
	}
	if aws.ToString(out.ContentType) != "application/vnd.apache.parquet" || out.Metadata["generation"] != "7" {
		t.Fatalf("content type %v metadata %v", aws.ToString(out.ContentType), out.Metadata)
	}
	head, err := c.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: &bucket, Key: &r.Key, ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	// moto stores the checksum header it was sent on PutObject.
	if aws.ToString(head.ChecksumCRC32C) != r.CRC32C {
		t.Fatalf("stored x-amz-checksum-crc32c %v, want %s", aws.ToString(head.ChecksumCRC32C), r.CRC32C)
	}
}

func TestMotoEmptyObject(t *testing.T) {
	c, bucket := motoBucket(t)
	w := NewWriter(t.Context(), c, bucket, "empty", Options{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	stored, _ := getObject(t, c, bucket, "empty")
	if len(stored) != 0 {
		t.Fatalf("%d bytes", len(stored))
	}
	checkStored(t, w.Result(), stored)
}

// listingAPI records the server's ListParts just before completing.
type listingAPI struct {
	*s3.Client
	parts []types.Part
}

func (l *listingAPI) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	out, err := l.ListParts(ctx, &s3.ListPartsInput{Bucket: in.Bucket, Key: in.Key, UploadId: in.UploadId})
	if err != nil {
		return nil, err
	}
	l.parts = out.Parts
	return l.Client.CompleteMultipartUpload(ctx, in, optFns...)
}

func TestMotoMultipart(t *testing.T) {
	for _, mode := range []ChecksumMode{ChecksumFullObject, ChecksumComposite, ChecksumNone} {
		t.Run(fmt.Sprint("checksums=", mode), func(t *testing.T) {
			c, bucket := motoBucket(t)
			api := &listingAPI{Client: c}
			data := randomBytes(int(3*MinPartSize+MinPartSize/2), 22)
			w := NewWriter(t.Context(), api, bucket, "big.parquet", Options{
				PartSize: MinPartSize, Concurrency: 2, Checksums: mode,
				ContentType: "application/vnd.apache.parquet", ContentEncoding: "identity",
			})
			if err := writeChunks(t, w, data); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			r := w.Result()
			stored, out := getObject(t, c, bucket, r.Key)
			if !bytes.Equal(stored, data) {
				t.Fatal("stored object differs")
			}
			checkStored(t, r, stored)
			if r.Parts != 4 || !strings.HasSuffix(strings.Trim(r.ETag, `"`), "-4") {
				t.Fatalf("Parts %d ETag %s", r.Parts, r.ETag)
			}
			if aws.ToString(out.ContentType) != "application/vnd.apache.parquet" {
				t.Fatalf("content type %v", aws.ToString(out.ContentType))
			}
			if len(api.parts) != 4 {
				t.Fatalf("ListParts: %d parts", len(api.parts))
			}
			for i, p := range api.parts {
				size := MinPartSize
				if i == 3 {
					size = MinPartSize / 2
				}
				if aws.ToInt32(p.PartNumber) != int32(i+1) || aws.ToInt64(p.Size) != size {
					t.Fatalf("part %d: number %d size %d", i, aws.ToInt32(p.PartNumber), aws.ToInt64(p.Size))
				}
			}
			head, err := c.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: &bucket, Key: &r.Key, ChecksumMode: types.ChecksumModeEnabled})
			if err != nil {
				t.Fatal(err)
			}
			// moto computes this itself (and falls back to plain CRC32
			// without the python crc32c package), so it is only logged.
			t.Logf("moto HeadObject: type %q crc32c %v; ours %s (plain CRC32 would be %s)", head.ChecksumType, aws.ToString(head.ChecksumCRC32C), r.CRC32C, crcBase64(crc32.ChecksumIEEE(stored)))
		})
	}
}

func TestMotoCancelMidStreamLeavesNothing(t *testing.T) {
	c, bucket := motoBucket(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	w := NewWriter(ctx, c, bucket, "cancelled", Options{PartSize: MinPartSize, Concurrency: 2})
	if err := writeChunks(t, w, randomBytes(int(3*MinPartSize+1), 23)); err != nil {
		t.Fatal(err)
	}
	ups, err := c.ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{Bucket: &bucket})
	if err != nil {
		t.Fatal(err)
	}
	if len(ups.Uploads) != 1 {
		t.Fatalf("%d multipart uploads in progress before cancel, want 1", len(ups.Uploads))
	}
	cancel()
	if _, err := w.Write([]byte("more")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write after cancel = %v", err)
	}
	if err := w.Close(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close = %v", err)
	}
	if err := w.Abort(t.Context()); err != nil {
		t.Fatalf("abort: %v", err)
	}
	ups, err = c.ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{Bucket: &bucket})
	if err != nil {
		t.Fatal(err)
	}
	if len(ups.Uploads) != 0 {
		t.Fatalf("%d multipart uploads left after cancel", len(ups.Uploads))
	}
	_, err = c.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("cancelled")})
	var nf *types.NotFound
	if !errors.As(err, &nf) {
		t.Fatalf("HeadObject after cancel = %v, want NotFound", err)
	}
}

// TestMotoExplicitAbort is the go-cloud "not Close means not committed" rule.
func TestMotoExplicitAbort(t *testing.T) {
	c, bucket := motoBucket(t)
	w := NewWriter(t.Context(), c, bucket, "abandoned", Options{PartSize: MinPartSize})
	if err := writeChunks(t, w, randomBytes(int(2*MinPartSize+1), 24)); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(t.Context()); err != nil {
		t.Fatal(err)
	}
	ups, err := c.ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{Bucket: &bucket})
	if err != nil {
		t.Fatal(err)
	}
	if len(ups.Uploads) != 0 {
		t.Fatalf("%d uploads left", len(ups.Uploads))
	}
}
