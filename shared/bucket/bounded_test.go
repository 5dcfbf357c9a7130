package bucket_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

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

// endlessListing is a bucket whose listing never ends: every page holds
// 1000 more keys under the prefix asked for, as a customer who planted
// keys without end would make it. It counts the pages read and fails any
// delete.
type endlessListing struct {
	bucket.API
	pages int
}

func (e *endlessListing) ListObjectsV2(_ context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	e.pages++
	out := &s3.ListObjectsV2Output{IsTruncated: aws.Bool(true), NextContinuationToken: aws.String(fmt.Sprint(e.pages))}
	for i := range 1000 {
		out.Contents = append(out.Contents, types.Object{Key: aws.String(fmt.Sprintf("%sk-%06d-%04d", aws.ToString(in.Prefix), e.pages, i)), Size: aws.Int64(1)})
		if in.Delimiter != nil {
			out.CommonPrefixes = append(out.CommonPrefixes, types.CommonPrefix{Prefix: aws.String(fmt.Sprintf("%sd-%06d-%04d/", aws.ToString(in.Prefix), e.pages, i))})
		}
	}
	return out, nil
}

func (e *endlessListing) DeleteObjects(context.Context, *s3.DeleteObjectsInput, ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	return nil, errors.New("a refused listing deleted something")
}

// TestListingsBounded: a listing stops at the caller's limit with
// ErrTooMany naming the prefix and the limit, having read one page past
// it, however many keys the bucket holds; DeleteStale over such a prefix
// refuses without deleting anything.
func TestListingsBounded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int
		run   func(b *bucket.Bucket) error
	}{
		{"List", 2500, func(b *bucket.Bucket) error { _, err := b.List(t.Context(), "dt=2026-01-01/", 2500); return err }},
		{"Dirs", 2500, func(b *bucket.Bucket) error { _, err := b.Dirs(t.Context(), "dt=2026-01-01/", 2500); return err }},
		{"DeleteStale", bucket.MaxStaleListed, func(b *bucket.Bucket) error { return b.DeleteStale(t.Context(), "dt=2026-01-01/", nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := &endlessListing{}
			err := tc.run(bucket.New(api, "b", bucket.Options{}).WithPrefix("acct/"))
			if !errors.Is(err, bucket.ErrTooMany) {
				t.Fatalf("err = %v, want ErrTooMany", err)
			}
			for _, want := range []string{"s3://b/acct/dt=2026-01-01/", fmt.Sprint(tc.limit)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
			if want := tc.limit/1000 + 1; api.pages != want {
				t.Errorf("read %d pages, want %d (one past the limit)", api.pages, want)
			}
		})
	}
}

// endlessUploads is a bucket whose incomplete uploads never end: every
// listing page holds 1000 more under the prefix asked for. It counts the
// pages read and the aborts.
type endlessUploads struct {
	bucket.API
	pages, aborts int
}

func (e *endlessUploads) ListMultipartUploads(_ context.Context, in *s3.ListMultipartUploadsInput, _ ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error) {
	e.pages++
	out := &s3.ListMultipartUploadsOutput{IsTruncated: aws.Bool(true), NextKeyMarker: aws.String(fmt.Sprint(e.pages)), NextUploadIdMarker: aws.String("u")}
	for i := range 1000 {
		out.Uploads = append(out.Uploads, types.MultipartUpload{Key: aws.String(fmt.Sprintf("%sk-%06d-%04d", aws.ToString(in.Prefix), e.pages, i)), UploadId: aws.String("u")})
	}
	return out, nil
}

func (e *endlessUploads) AbortMultipartUpload(context.Context, *s3.AbortMultipartUploadInput, ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	e.aborts++
	return &s3.AbortMultipartUploadOutput{}, nil
}

// TestAbortIncompleteBounded: the cleanup of incomplete uploads under a
// partition follows at most MaxUploadsListed of them, then stops with
// ErrTooMany naming the prefix, however many were started there.
func TestAbortIncompleteBounded(t *testing.T) {
	api := &endlessUploads{}
	_, err := bucket.New(api, "b", bucket.Options{}).WithPrefix("acct/").AbortIncomplete(t.Context(), "dt=2026-01-01/", nil)
	if !errors.Is(err, bucket.ErrTooMany) || !strings.Contains(err.Error(), "s3://b/acct/dt=2026-01-01/") {
		t.Fatalf("err = %v, want ErrTooMany naming s3://b/acct/dt=2026-01-01/", err)
	}
	if want := bucket.MaxUploadsListed/1000 + 1; api.pages != want || api.aborts > bucket.MaxUploadsListed {
		t.Errorf("read %d pages and aborted %d uploads, want %d pages and at most %d aborts", api.pages, api.aborts, want, bucket.MaxUploadsListed)
	}
}
