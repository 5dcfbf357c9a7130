package bucket_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
)

// lyingLength is a store whose GetObject says the object has length
// (nil: no Content-Length at all), whatever its size.
type lyingLength struct {
	bucket.API
	length *int64
}

func (l lyingLength) GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	out, err := l.API.GetObject(ctx, in, opts...)
	if err == nil {
		out.ContentLength = l.length
	}
	return out, err
}

// TestGetBoundedWhateverTheLength: an object larger than the limit is
// refused whether the store says its length, says a wrong one or none, and
// the read holds no more than the limit: a planted 64 MiB object read with
// an 8 KiB limit allocates well under a MiB.
func TestGetBoundedWhateverTheLength(t *testing.T) {
	const size, limit = 64 << 20, 8 << 10
	fake := buckettest.NewFake("b")
	big := make([]byte, size)
	if err := bucket.New(fake, "b", bucket.Options{}).Put(t.Context(), "p/_SUCCESS", big, ""); err != nil {
		t.Fatal(err)
	}
	big = nil
	for _, tc := range []struct {
		name string
		api  bucket.API
	}{
		{"true length", fake},
		{"a length under the limit", lyingLength{fake, aws.Int64(10)}},
		{"no length", lyingLength{fake, nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bucket.New(tc.api, "b", bucket.Options{}).WithPrefix("p/")
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			got, err := b.Get(t.Context(), "_SUCCESS", limit)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, bucket.ErrTooLarge) || got != nil {
				t.Fatalf("Get = %d bytes, %v; want ErrTooLarge", len(got), err)
			}
			if !strings.Contains(err.Error(), "s3://b/p/_SUCCESS") || !strings.Contains(err.Error(), "8192") {
				t.Errorf("error %q does not name the key and the limit", err)
			}
			// The fake clones the object for its body (64 MiB); the read
			// itself must add no more than about the limit.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size+1<<20 {
				t.Errorf("the refused read allocated %d bytes, want at most the store's copy (%d) + 1 MiB", alloc, size)
			}
		})
	}
}
