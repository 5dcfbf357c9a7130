package bucket

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// TestClassify: each AWS error maps to its named error, and the SDK's error
// stays reachable through the wrapping.
func TestClassify(t *testing.T) {
	other := errors.New("connection reset")
	for _, tc := range []struct {
		name string
		err  error
		want error // nil: none of the named errors
	}{
		{"NoSuchKey type", &types.NoSuchKey{}, ErrNotFound},
		{"NotFound type (HeadObject)", &types.NotFound{}, ErrNotFound},
		{"NoSuchKey code", &smithy.GenericAPIError{Code: "NoSuchKey"}, ErrNotFound},
		{"NoSuchBucket type", &types.NoSuchBucket{}, ErrNoSuchBucket},
		{"NoSuchBucket code", &smithy.GenericAPIError{Code: "NoSuchBucket"}, ErrNoSuchBucket},
		{"AccessDenied (wrong expected owner)", &smithy.GenericAPIError{Code: "AccessDenied"}, ErrAccessDenied},
		{"AllAccessDisabled", &smithy.GenericAPIError{Code: "AllAccessDisabled"}, ErrAccessDenied},
		{"Forbidden (HEAD has no body)", &smithy.GenericAPIError{Code: "Forbidden"}, ErrAccessDenied},
		{"wrapped by the SDK", fmt.Errorf("operation error S3: GetObject: %w", &types.NoSuchKey{}), ErrNotFound},
		{"another API error", &smithy.GenericAPIError{Code: "SlowDown"}, nil},
		{"not an API error", other, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New(nil, "bkt", Options{})
			err := b.fail("get", "a/k", tc.err)
			for _, kind := range []error{ErrNotFound, ErrNoSuchBucket, ErrAccessDenied} {
				if got := errors.Is(err, kind); got != (kind == tc.want) {
					t.Errorf("errors.Is(%v, %v) = %v", err, kind, got)
				}
			}
			if IsNotFound(err) != (tc.want == ErrNotFound) {
				t.Errorf("IsNotFound(%v) wrong", err)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("%v does not wrap the SDK's error", err)
			}
			if want := "get s3://bkt/a/k: " + tc.err.Error(); err.Error() != want {
				t.Errorf("message %q, want %q", err, want)
			}
		})
	}
}

// partialDelete answers DeleteObjects with a per-key error, as S3 does for
// a key it could not delete.
type partialDelete struct {
	API
	objects []string
	calls   int
}

func (p *partialDelete) ListObjectsV2(_ context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	out := &s3.ListObjectsV2Output{IsTruncated: aws.Bool(false)}
	for _, k := range p.objects {
		if strings.HasPrefix(k, aws.ToString(in.Prefix)) {
			out.Contents = append(out.Contents, types.Object{Key: aws.String(k), Size: aws.Int64(1)})
		}
	}
	return out, nil
}

func (p *partialDelete) DeleteObjects(_ context.Context, in *s3.DeleteObjectsInput, _ ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	p.calls++
	k := in.Delete.Objects[len(in.Delete.Objects)-1].Key
	return &s3.DeleteObjectsOutput{Errors: []types.Error{{Key: k, Code: aws.String("AccessDenied"), Message: aws.String("Access Denied")}}}, nil
}

// TestDeleteStaleNamesTheKey: a key S3 refused to delete stops DeleteStale
// with an error naming it and its code.
func TestDeleteStaleNamesTheKey(t *testing.T) {
	api := &partialDelete{objects: []string{"p/a", "p/b", "p/locked"}}
	err := New(api, "bkt", Options{}).DeleteStale(t.Context(), "p/", map[string]bool{"p/a": true})
	if err == nil || !strings.Contains(err.Error(), "s3://bkt/p/locked") || !strings.Contains(err.Error(), "AccessDenied") || !errors.Is(err, ErrAccessDenied) {
		t.Fatalf("DeleteStale = %v, want an access-denied error naming p/locked", err)
	}
	if api.calls != 1 {
		t.Errorf("%d DeleteObjects calls after a refusal, want 1", api.calls)
	}
}
