package buckettest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/daybook-dev/daybook/shared/bucket"
)

// createUploads starts one upload per key straight on the store, as a run
// that died (or lost a response) leaves them, with 8 in flight.
func createUploads(h *harness, keys []string) {
	h.t.Helper()
	errs := make(chan error, len(keys))
	sem := make(chan struct{}, 8)
	for _, k := range keys {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- h.be.Inspect.StartUpload(h.ctx, k)
		}()
	}
	for range keys {
		if err := <-errs; err != nil {
			h.t.Fatal(err)
		}
	}
}

// testAbortIncomplete: every incomplete upload under the prefix that the
// store lists by prefix, or that is at one of the named keys, is aborted
// (two of one key, one with a part uploaded, more than a page of them),
// and nothing outside the prefix; objects are untouched; a scoped Bucket
// aborts under its own prefix and reports keys relative to it. A store that
// lists uploads only by key (MinIO) leaves those under the prefix at keys
// nobody named: the scenario says which. A store whose incomplete uploads
// cannot be listed or aborted (GCS's sessions, Azure's staged blocks)
// aborts nothing and touches nothing. A named key outside the prefix is
// refused before anything is aborted.
func testAbortIncomplete(t *testing.T, nb func(*testing.T) Backend) {
	for _, tc := range []struct {
		name    string
		scope   string // Bucket.WithPrefix
		prefix  string
		uploads []string // full keys
		keys    []string // named to AbortIncomplete, relative to scope
		want    []string // aborted, as reported
		// unnamed are uploads in want at keys not in keys: a store that
		// lists uploads only by key leaves them open.
		unnamed []string
		left    []string // still open, full keys
		err     string   // AbortIncomplete's error, if any
	}{
		{"under the prefix only", "", "p/", []string{"p/a", "p/a", "p/ab", "p/b/c", "pa", "q/x"}, []string{"p/a", "p/with-part", "p/none"},
			[]string{"p/a", "p/a", "p/ab", "p/b/c"}, []string{"p/ab", "p/b/c"}, []string{"pa", "q/x"}, ""},
		{"nothing open", "", "p/", nil, []string{"p/a"}, nil, nil, nil, ""},
		{"scoped bucket", "acct/", "p/", []string{"acct/p/a", "acct/q/b", "p/a"}, []string{"p/a", "p/with-part"},
			[]string{"p/a"}, nil, []string{"acct/q/b", "p/a"}, ""},
		// Pages by prefix; a store listing only by key finds the named three.
		{"more than one page", "", "p/", append(numbered("p/u-", 1001), "q/x"), numbered("p/u-", 3),
			numbered("p/u-", 1001), numbered("p/u-", 1001)[3:], []string{"q/x"}, ""},
		{"a named key outside the prefix", "", "p/", []string{"p/a", "q/x"}, []string{"p/a", "q/x"},
			nil, nil, []string{"p/a", "q/x"}, `key "q/x" is not under that prefix`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nb, bucket.Options{ExpectedOwner: Owner})
			unlisted := h.differs(h.be.UploadsUnlisted)
			kept := h.differs(h.be.UploadsKept)
			if (unlisted || kept) && len(tc.uploads) > 100 {
				tc.uploads = tc.uploads[:100] // nothing pages through them: fewer do
				tc.want = tc.want[:min(len(tc.want), 100)]
			}
			h.put("p/done", "p/a")
			createUploads(h, tc.uploads)
			opened := slices.Clone(tc.uploads)
			// One open upload holds a part: it is aborted like the others.
			if len(tc.uploads) > 0 && len(tc.uploads) < 10 {
				// A store that starts an upload with no call of its own
				// (Azure) shows it once its first part is there.
				partDone := make(chan struct{})
				h.faults.Set(nil, Once(nil, func(c Call) bool {
					if c.Op == OpUploadPart && c.Key == tc.scope+"p/with-part" {
						close(partDone)
					}
					return false
				}))
				w := h.b.NewWriter(h.ctx, tc.scope+"p/with-part", uploadOpts())
				if err := writeChunks(t, w, randomBytes(int(minPart)+1, 7)); err != nil {
					t.Fatal(err)
				}
				// Not closed: its first part is uploaded, the upload open.
				defer func() { _ = w.Abort(h.ctx) }()
				select {
				case <-partDone:
				case <-h.ctx.Done():
					t.Fatal(h.ctx.Err())
				}
				if !unlisted {
					waitOpen(h, tc.scope+"p/with-part")
				}
				opened = append(opened, tc.scope+"p/with-part")
				if tc.err == "" {
					tc.want = append(tc.want, "p/with-part")
				} else {
					tc.left = append(tc.left, "p/with-part")
				}
			}
			if h.differs(h.be.UploadsByKeyOnly) {
				for _, k := range tc.unnamed {
					i := slices.Index(tc.want, k)
					tc.want = slices.Delete(tc.want, i, i+1)
					tc.left = append(tc.left, tc.scope+k)
				}
			}
			if unlisted || kept {
				// Nothing to abort: what was open stays where the store
				// shows it (its staged blocks, until collected).
				tc.want = nil
				tc.left = nil
				if kept {
					tc.left = distinctKeys(opened)
				}
			}
			var mu sync.Mutex
			var owners []*string
			h.faults.Set(func(c Call) error {
				if c.Op == OpListUploads || c.Op == OpAbortMultipart {
					mu.Lock()
					owners = append(owners, c.Owner)
					mu.Unlock()
				}
				return nil
			}, nil)
			b := h.b.WithPrefix(tc.scope)
			got, err := b.AbortIncomplete(h.ctx, tc.prefix, tc.keys)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || len(got) != 0 || len(owners) != 0 {
					t.Fatalf("AbortIncomplete = %v, %v after %d calls; want the error %q before any call", got, err, len(owners), tc.err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			slices.Sort(tc.want)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("aborted %d %v, want %d %v", len(got), head(got), len(tc.want), head(tc.want))
			}
			if !unlisted {
				left := distinctKeysIf(kept, h.openUploads(distinctKeys(opened)...))
				slices.Sort(left)
				slices.Sort(tc.left)
				if fmt.Sprint(left) != fmt.Sprint(tc.left) {
					t.Errorf("still open %v, want %v", head(left), head(tc.left))
				}
			}
			if keys := h.keys(); fmt.Sprint(keys) != "[p/a p/done]" {
				t.Errorf("objects after AbortIncomplete: %v", keys)
			}
			for i, o := range owners {
				if want := Owner; h.be.NoOwner != "" && o != nil || h.be.NoOwner == "" && aws.ToString(o) != want {
					t.Errorf("call %d: ExpectedBucketOwner %v", i+1, aws.ToString(o))
				}
			}
			if tc.err != "" {
				return
			}
			// Nothing left to abort: a second call is a no-op.
			if again, err := b.AbortIncomplete(h.ctx, tc.prefix, tc.keys); err != nil || len(again) != 0 {
				t.Errorf("second AbortIncomplete = %v, %v", again, err)
			}
		})
	}
}

func distinctKeys(keys []string) []string {
	keys = slices.Clone(keys)
	slices.Sort(keys)
	return slices.Compact(keys)
}

// distinctKeysIf is distinctKeys(keys) when on: a store that shows an
// incomplete upload per key, not per upload (Azure's uncommitted blob).
func distinctKeysIf(on bool, keys []string) []string {
	if on {
		return distinctKeys(keys)
	}
	return keys
}

// waitOpen fails the test unless key has an open upload; a writer creates
// its upload before Write returns past the first part.
func waitOpen(h *harness, key string) {
	h.t.Helper()
	if open := h.openUploads(key); !slices.Contains(open, key) {
		h.t.Fatalf("no open upload of %s: %v", key, open)
	}
}

func head(s []string) []string { return s[:min(len(s), 5)] }
