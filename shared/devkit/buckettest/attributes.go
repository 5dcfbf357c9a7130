package buckettest

import (
	"fmt"
	"testing"

	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/upload"
)

// Attrs are what daybook writes every object with besides its content, as
// the suite asks for them and reads them back: on S3 the encryption
// (AES256, or aws:kms with KMSKey and a bucket key), the canned ACL and the
// tags; on GCS the customer-managed key (KMSKey: kmsKeyName) and the tags
// (as metadata); on Azure the encryption scope (KMSKey) and the tags (blob
// index tags).
type Attrs struct {
	Encryption string
	KMSKey     string
	BucketKey  bool
	ACL        string
	Tags       map[string]string
}

// testAttributes: every way an object is written (Put, PutIfAbsent,
// PutWith, a Writer's single request and its upload in parts) carries the
// bucket's encryption and tags, as the store keeps them; where an emulator
// does not keep one, the requests that wrote the object carried it.
func testAttributes(t *testing.T, nb func(*testing.T) Backend) {
	probe := nb(t)
	want := probe.SampleAttrs
	want.ACL = "" // not readable back on one account: package upload's tests check it is sent
	h := newHarnessAttrs(t, func(*testing.T) Backend { return probe }, bucket.Options{}, probe.SampleAttrs)
	if h.differs(h.be.NoEncryption) {
		want.Encryption, want.KMSKey, want.BucketKey = "", "", false
		h = newHarnessAttrs(t, nb, bucket.Options{}, Attrs{Tags: probe.SampleAttrs.Tags})
	}
	big := randomBytes(int(2*minPart+1), 41)
	writes := map[string]func(key string) error{
		"put":           func(k string) error { return h.b.Put(h.ctx, k, []byte("x"), "text/plain") },
		"put-if-absent": func(k string) error { return h.b.PutIfAbsent(h.ctx, k, []byte("x"), "application/json") },
		"put-with": func(k string) error {
			return h.b.PutWith(h.ctx, k, []byte("# doc\n"), bucket.PutOptions{ContentType: "text/markdown", Metadata: map[string]string{"daybook-sha256": "ab"}})
		},
		"writer-small": func(k string) error { return writeAll(t, h.b.NewWriter(h.ctx, k, uploadOpts()), big[:100]) },
		"writer-parts": func(k string) error { return writeAll(t, h.b.NewWriter(h.ctx, k, uploadOpts()), big) },
	}
	unkept := h.differs(h.be.AttrsUnkept)
	for _, name := range []string{"put", "put-if-absent", "put-with", "writer-small", "writer-parts"} {
		key := "attrs/" + name
		if err := writes[name](key); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := h.stored(key).Attrs
		if unkept {
			sent, ok := h.be.Inspect.Sent(key)
			if !ok {
				continue // records no requests (the in-memory fake)
			}
			got = sent
		}
		got.ACL = ""
		if name == "writer-parts" && want.BucketKey && h.differs(h.be.MultipartBucketKey) {
			got.BucketKey = true
		}
		if h.be.Store == "gcs" && got.Tags != nil { // tags are metadata there, beside daybook's own
			got.Tags = only(got.Tags, want.Tags)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: the store has %+v, want %+v", name, got, want)
		}
	}
}

// only is m's entries whose keys are in keys.
func only(m, keys map[string]string) map[string]string {
	out := map[string]string{}
	for k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

func writeAll(t *testing.T, w *upload.Writer, data []byte) error {
	if err := writeChunks(t, w, data); err != nil {
		return err
	}
	return w.Close()
}
