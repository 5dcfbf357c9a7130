package buckettest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"testing"

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

// GCSCreateBucket creates a bucket on fake-gcs-server srv.
func GCSCreateBucket(ctx context.Context, srv *serverproc.Process, name string) error {
	return gcsserver.CreateBucket(ctx, srv, name)
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
		if err := GCSCreateBucket(t.Context(), *srv, name); err != nil {
			t.Fatal(err)
		}
		return Backend{
			Store: "gcs",
			Open: func(f *Faults, _ bucket.Options, a Attrs) *bucket.Bucket {
				return bucket.Open(f.WrapDriver(gcs.NewDriver(c, name, gcs.Options{KMSKeyName: a.KMSKey, Tags: a.Tags})))
			},
			Missing:     gcs.New(c, name+"-missing", gcs.Options{}),
			Inspect:     &gcsInspector{c: c, b: gcs.New(c, name, gcs.Options{}), name: name, base: (*srv).URL, rec: rec},
			SampleAttrs: Attrs{KMSKey: "projects/acme-data/locations/europe-west1/keyRings/daybook/cryptoKeys/exports", Tags: sampleTags},
			Differences: GCSDifferences,
		}
	}
}

type gcsInspector struct {
	c    *gcs.Client
	b    *bucket.Bucket // the bucket, read directly
	name string
	base string // the server's URL
	rec  *Requests
}

// Sent: the kmsKeyName of the upload request that named key (GCS keeps
// it; fake-gcs-server does not), and the tags the object keeps.
func (i *gcsInspector) Sent(key string) (Attrs, bool) {
	var a Attrs
	for _, q := range i.rec.Matching(func(q Request) bool {
		// The request that opened the upload, not a part of its session.
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
	a, err := i.c.Attrs(ctx, i.name, key)
	if bucket.IsNotFound(err) {
		return Stored{}, false, nil
	}
	if err != nil {
		return Stored{}, false, err
	}
	data, err := i.b.Get(ctx, key, 1<<30)
	if err != nil {
		return Stored{}, false, err
	}
	md := map[string]string{}
	for k, v := range a.Metadata {
		md[strings.ToLower(k)] = v
	}
	s := Stored{Data: data, ContentType: a.ContentType, ContentEncoding: a.ContentEncoding, Metadata: md, ETag: a.ETag,
		CRC32C: a.CRC32C, MD5: a.MD5Hash}
	s.Attrs.KMSKey = a.KMSKeyName
	s.Attrs.Tags = md
	return s, true, nil
}

func (i *gcsInspector) Keys(ctx context.Context) ([]string, error) {
	objs, err := i.b.List(ctx, "", 100_000)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.Key)
	}
	return out, nil
}

// OpenUploads: GCS lists no upload sessions.
func (i *gcsInspector) OpenUploads(context.Context, ...string) ([]string, error) { return nil, nil }

// StartUpload opens a resumable upload session and leaves it.
func (i *gcsInspector) StartUpload(ctx context.Context, key string) error {
	_, err := i.session(ctx, key, "")
	return err
}

// session opens a resumable upload of key declaring crc (none when empty)
// and returns its URI.
func (i *gcsInspector) session(ctx context.Context, key, crc string) (string, error) {
	meta, _ := json.Marshal(map[string]string{"name": key, "crc32c": crc})
	u := i.base + "/upload/storage/v1/b/" + url.PathEscape(i.name) + "/o?uploadType=resumable&name=" + url.QueryEscape(key)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(meta))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := i.c.HTTP().Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Location") == "" {
		return "", fmt.Errorf("start a resumable upload of %s: %s", key, resp.Status)
	}
	return resp.Header.Get("Location"), nil
}

// Parts: a session's parts are not listed.
func (i *gcsInspector) Parts(context.Context, string, string) ([]int64, error) { return nil, nil }

// WrongChecksums: a wrong CRC32C on a one-request upload, and on the last
// request of a resumable one (the driver's X-Goog-Hash).
func (i *gcsInspector) WrongChecksums() []WrongChecksum {
	put := func(ctx context.Context, u, rng string, body []byte, hash string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Range", rng)
		if hash != "" {
			req.Header.Set("X-Goog-Hash", "crc32c="+hash)
		}
		resp, err := i.c.HTTP().Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 400 {
			b, _ := io.ReadAll(resp.Body)
			return fmt.Errorf("%s: %s", resp.Status, b)
		}
		return nil
	}
	bad := func(data []byte) string { return crcBase64(crc32.Checksum(data, castagnoli) ^ 1) }
	return []WrongChecksum{
		{Name: "one-request upload CRC32C", Send: func(ctx context.Context, key string, data []byte) error {
			var body bytes.Buffer
			mw := multipart.NewWriter(&body)
			pw, _ := mw.CreatePart(textproto.MIMEHeader{"Content-Type": {"application/json"}})
			meta, _ := json.Marshal(map[string]string{"name": key, "crc32c": bad(data)})
			pw.Write(meta)
			pw, _ = mw.CreatePart(textproto.MIMEHeader{"Content-Type": {"application/octet-stream"}})
			pw.Write(data)
			mw.Close()
			u := i.base + "/upload/storage/v1/b/" + url.PathEscape(i.name) + "/o?uploadType=multipart&name=" + url.QueryEscape(key)
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, &body)
			if err != nil {
				return err
			}
			req.Header.Set("Content-Type", "multipart/related; boundary="+mw.Boundary())
			resp, err := i.c.HTTP().Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode >= 400 {
				b, _ := io.ReadAll(resp.Body)
				return fmt.Errorf("%s: %s", resp.Status, b)
			}
			return nil
		}},
		{Name: "resumable upload X-Goog-Hash", Send: func(ctx context.Context, key string, data []byte) error {
			u, err := i.session(ctx, key, "")
			if err != nil {
				return err
			}
			if err := put(ctx, u, fmt.Sprintf("bytes 0-%d/*", len(data)-1), data, ""); err != nil {
				return err
			}
			return put(ctx, u, fmt.Sprintf("bytes */%d", len(data)), nil, bad(data))
		}, Unverified: "fake-gcs-server checks no X-Goog-Hash: the wrong CRC32C on a resumable upload's last request is accepted; GCS refuses it"},
	}
}
