package buckettest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/bucket"
)

// createUploads starts one multipart upload per key straight on the store,
// as a run that died (or lost a response) leaves them, with 8 in flight.
func createUploads(h *harness, keys []string) {
	h.t.Helper()
	errs := make(chan error, len(keys))
	sem := make(chan struct{}, 8)
	for _, k := range keys {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			_, err := h.store.CreateMultipartUpload(h.ctx, &s3.CreateMultipartUploadInput{Bucket: &h.name, Key: aws.String(k)})
			errs <- err
		}()
	}
	for range keys {
		if err := <-errs; err != nil {
			h.t.Fatal(err)
		}
	}
}

// testAbortIncomplete: every incomplete upload under the prefix is aborted
// (two of one key, one with a part uploaded, more than a page of them), and
// nothing outside it; objects are untouched; a scoped Bucket aborts under
// its own prefix and reports keys relative to it.
func testAbortIncomplete(t *testing.T, nb func(*testing.T) Backend) {
	for _, tc := range []struct {
		name    string
		scope   string // Bucket.WithPrefix
		prefix  string
		uploads []string
		want    []string // aborted, as reported
		left    []string // still open, full keys
	}{
		{"under the prefix only", "", "p/", []string{"p/a", "p/a", "p/b/c", "pa", "q/x"},
			[]string{"p/a", "p/a", "p/b/c"}, []string{"pa", "q/x"}},
		{"nothing open", "", "p/", nil, nil, nil},
		{"scoped bucket", "acct/", "p/", []string{"acct/p/a", "acct/q/b", "p/a"},
			[]string{"p/a"}, []string{"acct/q/b", "p/a"}},
		{"more than one page", "", "p/", append(numbered("p/u-", 1001), "q/x"),
			numbered("p/u-", 1001), []string{"q/x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nb, bucket.Options{ExpectedOwner: Owner})
			h.put("p/done", "p/a")
			createUploads(h, tc.uploads)
			// One open upload holds a part: it is aborted like the others.
			if len(tc.uploads) > 0 && len(tc.uploads) < 10 {
				w := h.b.NewWriter(h.ctx, tc.scope+"p/with-part", uploadOpts())
				if err := writeChunks(t, w, randomBytes(int(minPart)+1, 7)); err != nil {
					t.Fatal(err)
				}
				// Not closed: its first part is uploaded, the upload open.
				defer func() { _ = w.Abort(h.ctx) }()
				waitOpen(h, tc.scope+"p/with-part")
				tc.want = append(tc.want, "p/with-part")
			}
			var owners []*string
			h.faults.Set(func(c Call) error {
				if c.Op == OpListUploads || c.Op == OpAbortMultipart {
					owners = append(owners, c.Owner)
				}
				return nil
			}, nil)
			b := h.b.WithPrefix(tc.scope)
			got, err := b.AbortIncomplete(h.ctx, tc.prefix)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			slices.Sort(tc.want)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("aborted %d %v, want %d %v", len(got), head(got), len(tc.want), head(tc.want))
			}
			left := h.openUploads()
			slices.Sort(left)
			if fmt.Sprint(left) != fmt.Sprint(tc.left) {
				t.Errorf("still open %v, want %v", left, tc.left)
			}
			if keys := h.keys(); fmt.Sprint(keys) != "[p/a p/done]" {
				t.Errorf("objects after AbortIncomplete: %v", keys)
			}
			for i, o := range owners {
				if aws.ToString(o) != Owner {
					t.Errorf("call %d: ExpectedBucketOwner %v", i+1, aws.ToString(o))
				}
			}
			// Nothing left to abort: a second call is a no-op.
			if again, err := b.AbortIncomplete(h.ctx, tc.prefix); err != nil || len(again) != 0 {
				t.Errorf("second AbortIncomplete = %v, %v", again, err)
			}
		})
	}
}

// waitOpen fails the test unless key has an open upload; a writer creates
// its upload before Write returns past the first part.
func waitOpen(h *harness, key string) {
	h.t.Helper()
	if !slices.Contains(h.openUploads(), key) {
		h.t.Fatalf("no open upload of %s: %v", key, h.openUploads())
	}
}

func head(s []string) []string { return s[:min(len(s), 5)] }
