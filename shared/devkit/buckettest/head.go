package buckettest

import (
	"maps"
	"testing"

	"github.com/daybook-dev/daybook/shared/bucket"
)

// testHeadMetadata checks PutWith stores content type and user metadata,
// Head returns them (keys lower-cased) without the body, a plain Put
// replaces them, and Head of an absent key is ErrNotFound.
func testHeadMetadata(t *testing.T, nb func(*testing.T) Backend) {
	h := newHarness(t, nb, bucket.Options{})
	b := h.b.WithPrefix("docs/")
	for _, tc := range []struct {
		name string
		put  func() error
		want bucket.Info
	}{
		{"with metadata", func() error {
			return b.PutWith(h.ctx, "README.md", []byte("# hello\n"), bucket.PutOptions{
				ContentType: "text/markdown; charset=utf-8",
				Metadata:    map[string]string{"daybook-sha256": "0a1b", "daybook-docs-sha256": "2c3d"},
			})
		}, bucket.Info{Size: 8, ContentType: "text/markdown; charset=utf-8", Metadata: map[string]string{"daybook-sha256": "0a1b", "daybook-docs-sha256": "2c3d"}}},
		{"replaced without metadata", func() error {
			return b.Put(h.ctx, "README.md", []byte("# hello again\n"), "text/plain")
		}, bucket.Info{Size: 14, ContentType: "text/plain", Metadata: map[string]string{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.put(); err != nil {
				t.Fatal(err)
			}
			got, err := b.Head(h.ctx, "README.md")
			if err != nil {
				t.Fatal(err)
			}
			if got.Size != tc.want.Size || got.ContentType != tc.want.ContentType || !maps.Equal(got.Metadata, tc.want.Metadata) {
				t.Errorf("Head = %+v, want %+v", got, tc.want)
			}
			if n := h.faults.Calls(OpHead, "docs/README.md"); n == 0 {
				t.Error("Head did not reach the store under the Bucket's prefix")
			}
		})
	}
	if _, err := b.Head(h.ctx, "missing.md"); !bucket.IsNotFound(err) {
		t.Errorf("Head of a missing key = %v, want ErrNotFound", err)
	}
}
