package gcs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"

	"github.com/daybook-dev/daybook/shared/upload"
)

// newObject is the resource an upload sends: what the object is written
// with.
type newObject struct {
	Name            string            `json:"name"`
	ContentType     string            `json:"contentType,omitempty"`
	ContentEncoding string            `json:"contentEncoding,omitempty"`
	Metadata        map[string]string `json:"metadata,omitempty"`
	CRC32C          string            `json:"crc32c,omitempty"`
}

// uploadURL is the upload endpoint of a bucket with query q.
func (c *Client) uploadURL(bucketName string, q url.Values) string {
	return c.upload + "b/" + url.PathEscape(bucketName) + "/o?" + q.Encode()
}

// uploadQuery is the query of an upload of name: its key, the
// precondition, the customer-managed key.
func uploadQuery(kind, name string, ifAbsent bool, kmsKey string) url.Values {
	q := url.Values{"uploadType": {kind}, "name": {name}}
	if ifAbsent {
		q.Set("ifGenerationMatch", "0")
	}
	if kmsKey != "" {
		q.Set("kmsKeyName", kmsKey)
	}
	return q
}

// insert stores body (size bytes, CRC32C crc) as obj in one multipart
// request whose resource carries the CRC32C: GCS refuses the upload when
// the bytes do not match it.
func (c *Client) insert(ctx context.Context, bucketName string, obj newObject, ifAbsent bool, kmsKey string, body io.ReadSeeker, size int64, crc uint32) (*Object, error) {
	obj.CRC32C = upload.CRCBase64(crc)
	meta, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var head bytes.Buffer
	mw := multipart.NewWriter(&head)
	pw, err := mw.CreatePart(textproto.MIMEHeader{"Content-Type": {"application/json; charset=UTF-8"}})
	if err != nil {
		return nil, err
	}
	pw.Write(meta)
	ct := obj.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	if _, err := mw.CreatePart(textproto.MIMEHeader{"Content-Type": {ct}}); err != nil {
		return nil, err
	}
	tail := "\r\n--" + mw.Boundary() + "--\r\n"
	u := c.uploadURL(bucketName, uploadQuery("multipart", obj.Name, ifAbsent, kmsKey))
	resp, err := c.do(ctx, func() (*http.Request, error) {
		if _, err := body.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		req, err := http.NewRequest(http.MethodPost, u, io.MultiReader(bytes.NewReader(head.Bytes()), body, strings.NewReader(tail)))
		if err != nil {
			return nil, err
		}
		req.ContentLength = int64(head.Len()) + size + int64(len(tail))
		req.Header.Set("Content-Type", "multipart/related; boundary="+mw.Boundary())
		return req, nil
	})
	if err != nil {
		return nil, err
	}
	return objectOf(resp)
}

// objectOf reads the object resource a finished upload answers with.
func objectOf(resp *http.Response) (*Object, error) {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return nil, apiError(resp)
	}
	var o Object
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&o); err != nil {
		return nil, fmt.Errorf("gcs: object resource: %w", err)
	}
	return &o, nil
}

// resumable is a GCS resumable upload of one object from the Writer's
// parts: Start opens the session, each Part is one request of its bytes at
// their offset (the parts come in order, one at a time: Protocol's
// Concurrency 1), Complete finishes it with the object's size and its
// CRC32C in X-Goog-Hash, which GCS verifies against the whole object, and
// Abort cancels the session (DELETE, which GCS answers 499), so nothing of
// it is kept.
type resumable struct {
	d    *driver
	key  string
	opts upload.Options

	session string // the session URI
	off     int64  // bytes GCS has
}

var _ upload.Protocol = (*resumable)(nil)

func (r *resumable) Where() string { return r.d.URI(r.key) }

func (r *resumable) object() newObject {
	return newObject{Name: r.key, ContentType: r.opts.ContentType, ContentEncoding: r.opts.ContentEncoding, Metadata: r.d.metadata(r.opts.Metadata)}
}

func (r *resumable) Put(ctx context.Context, body io.ReadSeeker, size int64, crc uint32) (upload.Committed, error) {
	o, err := r.d.c.insert(ctx, r.d.name, r.object(), false, r.d.opts.KMSKeyName, body, size, crc)
	if err != nil {
		return upload.Committed{}, classifyWrite(err)
	}
	return committed(o), nil
}

func committed(o *Object) upload.Committed {
	return upload.Committed{Key: o.Name, ETag: o.ETag, VersionID: strconv.FormatInt(o.Generation, 10)}
}

func (r *resumable) Start(ctx context.Context) error {
	meta, err := json.Marshal(r.object())
	if err != nil {
		return err
	}
	u := r.d.c.uploadURL(r.d.name, uploadQuery("resumable", r.key, false, r.d.opts.KMSKeyName))
	resp, err := r.d.c.do(ctx, func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(meta))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json; charset=UTF-8")
		return req, nil
	})
	if err != nil {
		return classifyWrite(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return classifyWrite(apiError(resp))
	}
	if r.session = resp.Header.Get("Location"); r.session == "" {
		return errors.New("gcs: the resumable upload's session has no URI")
	}
	return nil
}

// errIncomplete: GCS has fewer bytes than were sent.
var errIncomplete = errors.New("gcs: the session is missing bytes it acknowledged")

// Part sends the part's bytes at their offset. A failed request is sent
// again from what GCS says it has (a status query), within the part.
func (r *resumable) Part(ctx context.Context, _ int32, body io.ReadSeeker, size int64, _ uint32) error {
	end := r.off + size
	for attempt := 0; r.off < end; attempt++ {
		if attempt == Attempts {
			return fmt.Errorf("gcs: part at %d of %s: %d attempts failed", r.off, r.key, Attempts)
		}
		start := r.off
		if _, err := body.Seek(start-(end-size), io.SeekStart); err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, r.session, io.LimitReader(body, end-start))
		if err != nil {
			return err
		}
		req.ContentLength = end - start
		req.Header.Set("Content-Range", fmt.Sprintf("bytes %d-%d/*", start, end-1))
		resp, err := r.d.c.hc.Do(req)
		if err == nil && resp.StatusCode == http.StatusPermanentRedirect {
			resp.Body.Close()
			if r.off, err = persisted(resp); err != nil {
				return err
			}
			continue
		}
		if !retryable(err, resp) {
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			return classifyWrite(apiError(resp))
		}
		if resp != nil {
			resp.Body.Close()
		}
		if r.off, err = r.status(ctx); err != nil {
			return err
		}
		if r.off < start {
			return errIncomplete
		}
	}
	return nil
}

// persisted is the offset after the bytes GCS has, from a 308's Range
// ("bytes=0-N"; none: nothing yet).
func persisted(resp *http.Response) (int64, error) {
	rng := resp.Header.Get("Range")
	if rng == "" {
		return 0, nil
	}
	_, last, ok := strings.Cut(strings.TrimPrefix(rng, "bytes="), "-")
	n, err := strconv.ParseInt(last, 10, 64)
	if !ok || err != nil {
		return 0, fmt.Errorf("gcs: resumable upload status: Range %q", rng)
	}
	return n + 1, nil
}

// status asks GCS how many bytes the session has.
func (r *resumable) status(ctx context.Context) (int64, error) {
	resp, err := r.d.c.do(ctx, func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodPut, r.session, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Range", "bytes */*")
		return req, nil
	})
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusPermanentRedirect {
		return 0, classifyWrite(apiError(resp))
	}
	return persisted(resp)
}

// Complete finishes the upload: a request of no bytes naming the object's
// size, with its CRC32C, which GCS compares with the whole object it has.
func (r *resumable) Complete(ctx context.Context, _ int32, size int64, crc uint32) (upload.Committed, error) {
	if r.off != size {
		return upload.Committed{}, fmt.Errorf("gcs: %d bytes sent of %d", r.off, size)
	}
	resp, err := r.d.c.do(ctx, func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodPut, r.session, nil)
		if err != nil {
			return nil, err
		}
		req.ContentLength = 0
		req.Header.Set("Content-Range", fmt.Sprintf("bytes */%d", size))
		req.Header.Set("X-Goog-Hash", "crc32c="+upload.CRCBase64(crc))
		return req, nil
	})
	if err != nil {
		return upload.Committed{}, classifyWrite(err)
	}
	o, err := objectOf(resp)
	if err != nil {
		return upload.Committed{}, classifyWrite(err)
	}
	if o.Size != size || o.CRC32C != upload.CRCBase64(crc) {
		// Not what was written: take that generation away.
		_ = r.d.c.remove(context.WithoutCancel(ctx), r.d.name, r.key, url.Values{"ifGenerationMatch": {strconv.FormatInt(o.Generation, 10)}})
		return upload.Committed{}, fmt.Errorf("gcs committed %d bytes with CRC32C %s, the writer sent %d with %s", o.Size, o.CRC32C, size, upload.CRCBase64(crc))
	}
	return committed(o), nil
}

// Abort cancels the session: GCS answers 499 and keeps nothing of it.
func (r *resumable) Abort(ctx context.Context) error {
	if r.session == "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, r.session, nil)
	if err != nil {
		return err
	}
	resp, err := r.d.c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("cancel the resumable upload session: %w", err)
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case 499, http.StatusOK, http.StatusNoContent, http.StatusNotFound, http.StatusGone:
		return nil
	}
	return fmt.Errorf("cancel the resumable upload session: %s", resp.Status)
}
