package buckettest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/bucket/gcs"
	"github.com/daybook-dev/daybook/shared/devkit/gcsserver"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc"
)

// GCSDifferences are how Google Cloud Storage differs from S3.
var GCSDifferences = Differences{
	AttrsUnkept:        "fake-gcs-server keeps no kmsKeyName (GCS does): the case checks each upload request carried it",
	NoOwner:            "GCS has no expected-owner header: a bucket's name is global, and the customer's IAM grant decides what daybook may do in it",
	NotMultipart:       "a GCS upload in parts is a resumable upload: chunks of the part size sent in order, one at a time, with no per-part ETag or checksum mode; GCS verifies the whole object's CRC32C, sent with the last chunk",
	MissingBucketReads: "the GCS client reads an object of a missing bucket as a missing object (GCS answers 404 either way); a write or a listing there is ErrNoSuchBucket",
	UploadsUnlisted:    "GCS resumable upload sessions are known only to their writer (the session URI): none can be listed or aborted by anyone else, an abandoned one expires a week after it began, and the writer cancels its own (DELETE of the session URI)",
}

// GCSBackend returns a constructor of fresh buckets on a fake-gcs-server
// srv, named after the test.
func GCSBackend(srv **serverproc.Process) func(t *testing.T) Backend {
	return func(t *testing.T) Backend {
		t.Helper()
		rec := &Requests{}
		c, err := gcs.NewClient(t.Context(), gcs.Config{Endpoint: gcsserver.Endpoint(*srv), Transport: rec})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		name := BucketName(t)
		if err := c.Storage().Bucket(name).Create(t.Context(), "test", nil); err != nil {
			t.Fatalf("create bucket %s: %v", name, err)
		}
		return Backend{
			Store: "gcs",
			Open: func(f *Faults, _ bucket.Options, a Attrs) *bucket.Bucket {
				return bucket.Open(f.WrapDriver(gcs.NewDriver(c, name, gcs.Options{KMSKeyName: a.KMSKey, Tags: a.Tags})))
			},
			Missing:     gcs.New(c, name+"-missing", gcs.Options{}),
			Inspect:     &gcsInspector{c: c, b: c.Storage().Bucket(name), name: name, base: (*srv).URL, rec: rec},
			SampleAttrs: Attrs{KMSKey: "projects/acme-data/locations/europe-west1/keyRings/daybook/cryptoKeys/exports", Tags: sampleTags},
			Differences: GCSDifferences,
		}
	}
}

type gcsInspector struct {
	c    *gcs.Client
	b    *storage.BucketHandle
	name string
	base string // the server's URL
	rec  *Requests
}

// Sent: the kmsKeyName of the upload request that named key (GCS keeps
// it; fake-gcs-server does not), and the tags the object keeps.
func (i *gcsInspector) Sent(key string) (Attrs, bool) {
	var a Attrs
	for _, q := range i.rec.Matching(func(q Request) bool {
		// The request that opened the upload, not a chunk of its session.
		return q.Method == http.MethodPost && q.URL.Query().Get("name") == key && !q.URL.Query().Has("upload_id")
	}) {
		a.KMSKey = q.URL.Query().Get("kmsKeyName")
	}
	if st, ok, err := i.Object(context.Background(), key); err == nil && ok {
		a.Tags = st.Attrs.Tags
	}
	return a, true
}

var _ Inspector = (*gcsInspector)(nil)

func (i *gcsInspector) Object(ctx context.Context, key string) (Stored, bool, error) {
	a, err := i.b.Object(key).Attrs(ctx)
	if errors.Is(err, storage.ErrObjectNotExist) {
		return Stored{}, false, nil
	}
	if err != nil {
		return Stored{}, false, err
	}
	r, err := i.b.Object(key).NewReader(ctx)
	if err != nil {
		return Stored{}, false, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return Stored{}, false, err
	}
	md := map[string]string{}
	for k, v := range a.Metadata {
		md[strings.ToLower(k)] = v
	}
	var crc [4]byte
	binary.BigEndian.PutUint32(crc[:], a.CRC32C)
	s := Stored{Data: data, ContentType: a.ContentType, ContentEncoding: a.ContentEncoding, Metadata: md, ETag: a.Etag,
		CRC32C: base64.StdEncoding.EncodeToString(crc[:]), MD5: base64.StdEncoding.EncodeToString(a.MD5)}
	s.Attrs.KMSKey = a.KMSKeyName
	s.Attrs.Tags = md
	return s, true, nil
}

func (i *gcsInspector) Keys(ctx context.Context) ([]string, error) {
	var out []string
	it := i.b.Objects(ctx, nil)
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, a.Name)
	}
}

// OpenUploads: GCS lists no upload sessions.
func (i *gcsInspector) OpenUploads(context.Context, ...string) ([]string, error) { return nil, nil }

// StartUpload opens a resumable upload session and leaves it.
func (i *gcsInspector) StartUpload(ctx context.Context, key string) error {
	u := i.base + "/upload/storage/v1/b/" + url.PathEscape(i.name) + "/o?uploadType=resumable&name=" + url.QueryEscape(key)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader("{}"))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := i.c.HTTP().Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Location") == "" {
		return fmt.Errorf("start a resumable upload of %s: %s", key, resp.Status)
	}
	return nil
}

// Parts: a session's chunks are not listed.
func (i *gcsInspector) Parts(context.Context, string, string) ([]int64, error) { return nil, nil }

// WrongChecksums: a wrong CRC32C on a one-request upload, and on a
// resumable one (the library declares a given CRC32C when the session
// opens).
func (i *gcsInspector) WrongChecksums() []WrongChecksum {
	send := func(chunk int) func(ctx context.Context, key string, data []byte) error {
		return func(ctx context.Context, key string, data []byte) error {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			w := i.b.Object(key).NewWriter(ctx)
			w.ChunkSize = chunk
			w.SendCRC32C, w.CRC32C = true, crc32.Checksum(data, castagnoli)^1
			if _, err := io.Copy(w, bytes.NewReader(data)); err != nil {
				cancel()
				_ = w.Close()
				return err
			}
			return w.Close()
		}
	}
	return []WrongChecksum{
		{Name: "one-request upload CRC32C", Send: send(0)},
		{Name: "resumable upload CRC32C", Send: send(gcs.ChunkAlign),
			Unverified: "fake-gcs-server forgets a resumable upload's declared CRC32C after its first chunk and checks no X-Goog-Hash on the last one, so a wrong CRC32C in a resumable upload is accepted; GCS refuses it"},
	}
}
