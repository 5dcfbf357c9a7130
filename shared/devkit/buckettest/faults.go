package buckettest

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/bucket"
)

// Op names an S3 call of bucket.API; a driver's call (WrapDriver) is named
// by the S3 call it stands for.
type Op string

// The calls of bucket.API.
const (
	OpPut            Op = "PutObject"
	OpGet            Op = "GetObject"
	OpHead           Op = "HeadObject"
	OpDelete         Op = "DeleteObject"
	OpDeleteObjects  Op = "DeleteObjects"
	OpList           Op = "ListObjectsV2"
	OpCreate         Op = "CreateMultipartUpload"
	OpUploadPart     Op = "UploadPart"
	OpComplete       Op = "CompleteMultipartUpload"
	OpAbortMultipart Op = "AbortMultipartUpload"
	OpListUploads    Op = "ListMultipartUploads"
)

// Call is one call as a Hook sees it.
type Call struct {
	Op Op
	// Key is the object key; the prefix for ListObjectsV2 and
	// ListMultipartUploads; "" for
	// DeleteObjects, whose keys are in Keys.
	Key  string
	Keys []string
	// UploadID is the multipart upload's id (UploadPart, Complete, Abort).
	UploadID string
	// Part is UploadPart's part number.
	Part int32
	// Size is UploadPart's body size.
	Size int64
	// Owner is the ExpectedBucketOwner sent (nil: none).
	Owner *string
	// N counts the calls of Op on Key so far, this one included.
	N int
}

// Hook runs around a call; it must be safe for concurrent use, since
// multipart parts are uploaded concurrently. It may block (to hold a call).
type Hook func(Call) error

// Faults injects failures into the calls of the APIs it wraps and counts
// them. A Before hook runs before a call reaches the store: an error fails
// the call, which then never happened. An After hook runs once the call has
// taken effect: an error replaces its result, as a process that crashed right
// after the call would have left things. One Faults may wrap several APIs
// (an exporter asks for a client per message); hooks and counts are shared.
type Faults struct {
	mu     sync.Mutex
	before Hook
	after  Hook
	calls  map[callKey]int
	ops    map[Op]int
}

type callKey struct {
	op  Op
	key string
}

// Set replaces both hooks; nil hooks do nothing.
func (f *Faults) Set(before, after Hook) {
	f.mu.Lock()
	f.before, f.after = before, after
	f.mu.Unlock()
}

// Count returns how many calls of op were made (failed ones included).
func (f *Faults) Count(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ops[op]
}

// Calls returns how many calls of op were made on key.
func (f *Faults) Calls(op Op, key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[callKey{op, key}]
}

// Wrap returns api with f's hooks around every call.
func (f *Faults) Wrap(api bucket.API) bucket.API { return &faulty{api: api, f: f} }

// Once returns a Hook that returns err for the first call match accepts,
// and nil for every other call.
func Once(err error, match func(Call) bool) Hook {
	var mu sync.Mutex
	fired := false
	return func(c Call) error {
		mu.Lock()
		defer mu.Unlock()
		if fired || !match(c) {
			return nil
		}
		fired = true
		return err
	}
}

// Is returns a matcher for calls of op on key.
func Is(op Op, key string) func(Call) bool {
	return func(c Call) bool { return c.Op == op && c.Key == key }
}

func (f *Faults) runBefore(c *Call) error {
	f.mu.Lock()
	if f.calls == nil {
		f.calls, f.ops = map[callKey]int{}, map[Op]int{}
	}
	f.ops[c.Op]++
	f.calls[callKey{c.Op, c.Key}]++
	c.N = f.calls[callKey{c.Op, c.Key}]
	h := f.before
	f.mu.Unlock()
	if h == nil {
		return nil
	}
	return h(*c)
}

func (f *Faults) runAfter(c Call) error {
	f.mu.Lock()
	h := f.after
	f.mu.Unlock()
	if h == nil {
		return nil
	}
	return h(c)
}

type faulty struct {
	api bucket.API
	f   *Faults
}

// do runs call between the hooks.
func do[T any](f *Faults, c Call, call func() (*T, error)) (*T, error) {
	if err := f.runBefore(&c); err != nil {
		return nil, err
	}
	out, err := call()
	if err != nil {
		return out, err
	}
	if err := f.runAfter(c); err != nil {
		return nil, err
	}
	return out, nil
}

func (a *faulty) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	return do(a.f, Call{Op: OpPut, Key: aws.ToString(in.Key), Owner: in.ExpectedBucketOwner}, func() (*s3.PutObjectOutput, error) {
		return a.api.PutObject(ctx, in, o...)
	})
}

func (a *faulty) GetObject(ctx context.Context, in *s3.GetObjectInput, o ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	c := Call{Op: OpGet, Key: aws.ToString(in.Key), Owner: in.ExpectedBucketOwner}
	if err := a.f.runBefore(&c); err != nil {
		return nil, err
	}
	out, err := a.api.GetObject(ctx, in, o...)
	if err != nil {
		return out, err
	}
	if err := a.f.runAfter(c); err != nil {
		out.Body.Close()
		return nil, err
	}
	return out, nil
}

func (a *faulty) HeadObject(ctx context.Context, in *s3.HeadObjectInput, o ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	return do(a.f, Call{Op: OpHead, Key: aws.ToString(in.Key), Owner: in.ExpectedBucketOwner}, func() (*s3.HeadObjectOutput, error) {
		return a.api.HeadObject(ctx, in, o...)
	})
}

func (a *faulty) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, o ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	return do(a.f, Call{Op: OpDelete, Key: aws.ToString(in.Key), Owner: in.ExpectedBucketOwner}, func() (*s3.DeleteObjectOutput, error) {
		return a.api.DeleteObject(ctx, in, o...)
	})
}

func (a *faulty) DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, o ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	c := Call{Op: OpDeleteObjects, Owner: in.ExpectedBucketOwner}
	if in.Delete != nil {
		for _, id := range in.Delete.Objects {
			c.Keys = append(c.Keys, aws.ToString(id.Key))
		}
	}
	return do(a.f, c, func() (*s3.DeleteObjectsOutput, error) { return a.api.DeleteObjects(ctx, in, o...) })
}

func (a *faulty) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, o ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	return do(a.f, Call{Op: OpList, Key: aws.ToString(in.Prefix), Owner: in.ExpectedBucketOwner}, func() (*s3.ListObjectsV2Output, error) {
		return a.api.ListObjectsV2(ctx, in, o...)
	})
}

func (a *faulty) CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, o ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	return do(a.f, Call{Op: OpCreate, Key: aws.ToString(in.Key), Owner: in.ExpectedBucketOwner}, func() (*s3.CreateMultipartUploadOutput, error) {
		return a.api.CreateMultipartUpload(ctx, in, o...)
	})
}

func (a *faulty) UploadPart(ctx context.Context, in *s3.UploadPartInput, o ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	c := Call{Op: OpUploadPart, Key: aws.ToString(in.Key), UploadID: aws.ToString(in.UploadId), Part: aws.ToInt32(in.PartNumber), Size: aws.ToInt64(in.ContentLength), Owner: in.ExpectedBucketOwner}
	return do(a.f, c, func() (*s3.UploadPartOutput, error) { return a.api.UploadPart(ctx, in, o...) })
}

func (a *faulty) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, o ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	return do(a.f, Call{Op: OpComplete, Key: aws.ToString(in.Key), UploadID: aws.ToString(in.UploadId), Owner: in.ExpectedBucketOwner}, func() (*s3.CompleteMultipartUploadOutput, error) {
		return a.api.CompleteMultipartUpload(ctx, in, o...)
	})
}

func (a *faulty) AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, o ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	return do(a.f, Call{Op: OpAbortMultipart, Key: aws.ToString(in.Key), UploadID: aws.ToString(in.UploadId), Owner: in.ExpectedBucketOwner}, func() (*s3.AbortMultipartUploadOutput, error) {
		return a.api.AbortMultipartUpload(ctx, in, o...)
	})
}

func (a *faulty) ListMultipartUploads(ctx context.Context, in *s3.ListMultipartUploadsInput, o ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error) {
	return do(a.f, Call{Op: OpListUploads, Key: aws.ToString(in.Prefix), Owner: in.ExpectedBucketOwner}, func() (*s3.ListMultipartUploadsOutput, error) {
		return a.api.ListMultipartUploads(ctx, in, o...)
	})
}
