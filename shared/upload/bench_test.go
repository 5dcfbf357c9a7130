package upload

import (
	"context"
	"io"
	"runtime"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// discardS3 accepts everything and keeps nothing, so the benchmark measures
// the Writer: buffering, hashing, part hand-off and its own allocations.
type discardS3 struct{}

var (
	discardETag = aws.String(`"etag"`)
	discardID   = aws.String("upload")
)

func (discardS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	_, err := io.Copy(io.Discard, in.Body)
	return &s3.PutObjectOutput{ETag: discardETag}, err
}

func (discardS3) CreateMultipartUpload(context.Context, *s3.CreateMultipartUploadInput, ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	return &s3.CreateMultipartUploadOutput{UploadId: discardID}, nil
}

func (discardS3) UploadPart(_ context.Context, in *s3.UploadPartInput, _ ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	_, err := io.Copy(io.Discard, in.Body)
	return &s3.UploadPartOutput{ETag: discardETag}, err
}

func (discardS3) CompleteMultipartUpload(context.Context, *s3.CompleteMultipartUploadInput, ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	return &s3.CompleteMultipartUploadOutput{ETag: discardETag}, nil
}

func (discardS3) AbortMultipartUpload(context.Context, *s3.AbortMultipartUploadInput, ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	return &s3.AbortMultipartUploadOutput{}, nil
}

// BenchmarkWriter streams objects through a store that discards them, with
// default options (16 MiB parts, 4 in flight) and 1 MiB writes. B/op stays
// far below one part whatever the object size: part buffers come from the
// arena (off the Go heap on Linux), and what remains is a few small
// allocations per part (request structs, checksum strings, one goroutine).
func BenchmarkWriter(b *testing.B) {
	chunk := randomBytes(1<<20, 42)
	for _, size := range []int{64, 256} {
		b.Run(strconv.Itoa(size)+"MiB", func(b *testing.B) {
			benchWriter(b, chunk, size)
		})
	}
}

// BenchmarkWriterSmallWrites is the encoder's pattern: many 4 KiB writes.
func BenchmarkWriterSmallWrites(b *testing.B) {
	benchWriter(b, randomBytes(4<<10, 43), 256)
}

func benchWriter(b *testing.B, chunk []byte, mib int) {
	total := mib << 20
	b.SetBytes(int64(total))
	b.ReportAllocs()
	ctx := context.Background()
	parts := 0
	for b.Loop() {
		w := NewWriter(ctx, discardS3{}, "bucket", "key", Options{})
		for n := 0; n < total; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		parts = w.Result().Parts
	}
	b.ReportMetric(float64(parts), "parts/op")
	// HeapSys only grows while the process runs: an upper bound on the peak
	// heap (part buffers included off Linux only).
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapSys)/(1<<20), "heap-sys-MiB")
}
