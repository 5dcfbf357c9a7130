// Package gcs is the Google Cloud Storage driver of a bucket.Bucket, over
// cloud.google.com/go/storage's JSON API client (never its gRPC one).
//
// Its guarantees, beside S3's:
//   - an object of at most one part is one upload request carrying its
//     CRC32C, which GCS verifies;
//   - a larger one is a resumable upload in chunks of the part size, one
//     chunk in flight (the library buffers one chunk to resend it), whose
//     last request carries the whole object's CRC32C, which GCS verifies;
//     the Writer compares the committed object's CRC32C and size with its
//     own, too;
//   - an aborted upload's session is cancelled (DELETE of the session URI
//     the library opened, recorded by the client's transport), so nothing
//     of it stays; a killed run's session cannot be listed or found by
//     anyone and expires after a week, so AbortIncomplete has nothing to
//     do;
//   - create-if-absent is ifGenerationMatch=0;
//   - every object carries the customer-managed key (kmsKeyName) and the
//     destination's tags (as object metadata) when set.
//
// GCS has no expected-owner header: a bucket's name is global, and what
// daybook may do in it is the customer's IAM grant to the identity it acts
// as.
package gcs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"cloud.google.com/go/storage"
	"golang.org/x/oauth2"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/upload"
)

// Config is how to reach Google Cloud Storage.
type Config struct {
	// Endpoint is the JSON API's base URL: "" for Google's, or an
	// emulator's (http://127.0.0.1:4443/storage/v1/).
	Endpoint string
	// TokenSource authenticates every request (an access token for the
	// customer's service account); nil sends none, for an emulator.
	TokenSource oauth2.TokenSource
	// Transport carries the requests: nil is a clone of
	// http.DefaultTransport; a destination's custom endpoint goes through a
	// guarded one.
	Transport http.RoundTripper
}

// EndpointAt is the JSON API's base URL on a host (a destination's custom
// endpoint, https://host[:port]: a Private Service Connect endpoint, or an
// emulator); "" for Google's.
func EndpointAt(host string) string {
	if host == "" {
		return ""
	}
	return strings.TrimSuffix(host, "/") + "/storage/v1/"
}

// Client is a GCS client: the library's, and the HTTP client it sends
// through (which the Writer's abort uses to cancel a resumable session).
type Client struct {
	sc *storage.Client
	hc *http.Client
}

// NewClient returns a JSON API client for cfg. It looks for no default
// credentials: what authenticates it is cfg.TokenSource alone.
func NewClient(ctx context.Context, cfg Config) (*Client, error) {
	base := cfg.Transport
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	var rt http.RoundTripper = sessions{base}
	if cfg.TokenSource != nil {
		rt = &oauth2.Transport{Source: oauth2.ReuseTokenSource(nil, cfg.TokenSource), Base: rt}
	}
	hc := &http.Client{Transport: rt}
	opts := []option.ClientOption{option.WithHTTPClient(hc), option.WithoutAuthentication(), storage.WithJSONReads()}
	if cfg.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(cfg.Endpoint))
	}
	sc, err := storage.NewClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("gcs client: %w", err)
	}
	return &Client{sc: sc, hc: hc}, nil
}

// Close releases the client's resources.
func (c *Client) Close() error { return c.sc.Close() }

// Storage is the library's client, for what a Bucket does not do (a test
// creating buckets, reading what the store keeps).
func (c *Client) Storage() *storage.Client { return c.sc }

// HTTP is the client's HTTP client (authenticated as the Client is).
func (c *Client) HTTP() *http.Client { return c.hc }

// Options are what every object of a bucket is written with.
type Options struct {
	// KMSKeyName is the customer-managed Cloud KMS key
	// (projects/P/locations/L/keyRings/R/cryptoKeys/K) every object is
	// encrypted with; "" is the bucket's default.
	KMSKeyName string
	// Tags are metadata every object carries (destination.tags), beside
	// what a write gives; a write's own keys win.
	Tags map[string]string
}

// New returns the GCS bucket name reached through c.
func New(c *Client, name string, opts Options) *bucket.Bucket {
	return bucket.Open(NewDriver(c, name, opts))
}

// NewDriver is New's driver, for a test that wraps it.
func NewDriver(c *Client, name string, opts Options) bucket.Driver {
	return &driver{c: c, b: c.sc.Bucket(name), name: name, opts: opts}
}

type driver struct {
	c    *Client
	b    *storage.BucketHandle
	name string
	opts Options
}

var _ bucket.Driver = (*driver)(nil)

func (d *driver) Name() string          { return d.name }
func (d *driver) URI(key string) string { return "gs://" + d.name + "/" + key }

// metadata is the tags and md, md winning.
func (d *driver) metadata(md map[string]string) map[string]string {
	if len(d.opts.Tags) == 0 && len(md) == 0 {
		return nil
	}
	out := maps.Clone(d.opts.Tags)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, md)
	return out
}

// writer is a storage.Writer for key with the bucket's attributes.
func (d *driver) writer(ctx context.Context, key string, ifAbsent bool, contentType, contentEncoding string, md map[string]string) *storage.Writer {
	o := d.b.Object(key)
	if ifAbsent {
		o = o.If(storage.Conditions{DoesNotExist: true})
	}
	w := o.NewWriter(ctx)
	w.ContentType = contentType
	w.ForceEmptyContentType = contentType == ""
	w.ContentEncoding = contentEncoding
	w.Metadata = d.metadata(md)
	w.KMSKeyName = d.opts.KMSKeyName
	return w
}

// Put is one upload request carrying body's CRC32C, which GCS verifies.
func (d *driver) Put(ctx context.Context, key string, body []byte, o bucket.PutOptions) error {
	_, err := d.putOne(ctx, key, o.IfAbsent, o.ContentType, "", o.Metadata, bytes.NewReader(body), crc32.Checksum(body, castagnoli))
	return err
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (d *driver) putOne(ctx context.Context, key string, ifAbsent bool, contentType, contentEncoding string, md map[string]string, body io.Reader, crc uint32) (*storage.ObjectAttrs, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := d.writer(ctx, key, ifAbsent, contentType, contentEncoding, md)
	w.ChunkSize = 0 // one request, nothing buffered
	w.SendCRC32C, w.CRC32C = true, crc
	if _, err := io.Copy(w, body); err != nil {
		cancel()
		_ = w.Close()
		return nil, classifyWrite(err)
	}
	if err := w.Close(); err != nil {
		return nil, classifyWrite(err)
	}
	return w.Attrs(), nil
}

func (d *driver) Head(ctx context.Context, key string) (bucket.Info, error) {
	a, err := d.b.Object(key).Attrs(ctx)
	if err != nil {
		return bucket.Info{}, classify(err)
	}
	md := make(map[string]string, len(a.Metadata))
	for k, v := range a.Metadata {
		md[strings.ToLower(k)] = v
	}
	return bucket.Info{Size: a.Size, ContentType: a.ContentType, Metadata: md, CRC32C: upload.CRCBase64(a.CRC32C)}, nil
}

// Get reads the object. daybook writes no object with a Content-Encoding,
// so GCS transcodes none of its own; a planted gzip-encoded one is read
// decompressed, within the Bucket's bound all the same.
func (d *driver) Get(ctx context.Context, key string, rng bucket.Range) (io.ReadCloser, int64, error) {
	length := rng.Length
	if length == 0 {
		length = -1 // to the end
	}
	r, err := d.b.Object(key).NewRangeReader(ctx, rng.Offset, length)
	if err != nil {
		return nil, 0, classify(err)
	}
	return r, r.Remain(), nil
}

func (d *driver) Delete(ctx context.Context, key string) error {
	err := d.b.Object(key).Delete(ctx)
	if errors.Is(err, storage.ErrObjectNotExist) {
		return nil
	}
	return classify(err)
}

func (d *driver) List(ctx context.Context, prefix string, fn func(bucket.Object) error) error {
	q := &storage.Query{Prefix: prefix}
	if err := q.SetAttrSelection([]string{"Name", "Size"}); err != nil {
		return err
	}
	it := d.b.Objects(ctx, q)
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return nil
		}
		if err != nil {
			return classifyWrite(err) // a listing's 404 is the bucket's
		}
		if err := fn(bucket.Object{Key: a.Name, Size: a.Size}); err != nil {
			return err
		}
	}
}

func (d *driver) Dirs(ctx context.Context, prefix string) ([]string, error) {
	it := d.b.Objects(ctx, &storage.Query{Prefix: prefix, Delimiter: "/"})
	var names []string
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return names, nil
		}
		if err != nil {
			return nil, classifyWrite(err)
		}
		if a.Prefix != "" {
			names = append(names, strings.TrimSuffix(strings.TrimPrefix(a.Prefix, prefix), "/"))
		}
	}
}

// Deletes is how many of DeleteKeys' deletes run at once: GCS has no
// delete of many objects in one request the library sends.
const Deletes = 8

func (d *driver) DeleteKeys(ctx context.Context, keys []string) error {
	return deleteEach(ctx, keys, d.Delete)
}

// deleteEach deletes keys with del, Deletes at a time, and returns the
// first key's failure in key order.
func deleteEach(ctx context.Context, keys []string, del func(context.Context, string) error) error {
	errs := make([]error, len(keys))
	sem := make(chan struct{}, Deletes)
	var wg sync.WaitGroup
	for i, k := range keys {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = del(ctx, k)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return &bucket.KeyError{Key: keys[i], Err: err}
		}
	}
	return nil
}

// AbortIncomplete has nothing to abort: a resumable upload session is
// known only to whoever started it (its URI), is never listed, is
// invisible in the bucket, and expires a week after it began. The Writer
// cancels its own sessions when it fails.
func (d *driver) AbortIncomplete(context.Context, string, []string) ([]string, error) {
	return nil, nil
}

// ChunkAlign is the multiple of which every chunk of a resumable upload but
// the last must be.
const ChunkAlign = 256 << 10

// Protocol is a resumable upload: one chunk in flight, in order.
func (d *driver) Protocol(key string, opts upload.Options) (upload.Protocol, upload.Options) {
	opts.Concurrency = 1
	ps := upload.PartSizeFor(opts.PartSize, opts.MaxObjectSize)
	opts.PartSize = (ps + ChunkAlign - 1) / ChunkAlign * ChunkAlign
	return &resumable{d: d, key: key, opts: opts}, opts
}

func (d *driver) Classify(err error) error { return classify(err) }

// classify names the GCS errors callers branch on.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var ke *bucket.KindError
	if errors.As(err, &ke) {
		return err
	}
	var kind error
	var ge *googleapi.Error
	switch {
	case errors.Is(err, storage.ErrObjectNotExist):
		kind = bucket.ErrNotFound
	case errors.Is(err, storage.ErrBucketNotExist):
		kind = bucket.ErrNoSuchBucket
	case errors.As(err, &ge):
		switch ge.Code {
		case http.StatusNotFound:
			kind = bucket.ErrNotFound
			if strings.Contains(strings.ToLower(ge.Message), "bucket") {
				kind = bucket.ErrNoSuchBucket
			}
		case http.StatusUnauthorized, http.StatusForbidden:
			kind = bucket.ErrAccessDenied
		case http.StatusPreconditionFailed:
			kind = bucket.ErrExists
		}
	}
	if kind == nil {
		return err
	}
	return &bucket.KindError{Kind: kind, Err: err}
}

// classifyWrite classifies the error of a write or a listing, whose 404
// can only mean the bucket is missing (GCS says so in words; an emulator
// may not).
func classifyWrite(err error) error {
	var ge *googleapi.Error
	if errors.As(err, &ge) && ge.Code == http.StatusNotFound {
		return &bucket.KindError{Kind: bucket.ErrNoSuchBucket, Err: err}
	}
	return classify(err)
}

// resumable is a GCS resumable upload through the library's Writer with
// a chunk of the part size.
type resumable struct {
	d    *driver
	key  string
	opts upload.Options

	w       *storage.Writer
	cancel  context.CancelFunc
	session *session
}

var _ upload.Protocol = (*resumable)(nil)

func (r *resumable) Where() string { return r.d.URI(r.key) }

func (r *resumable) Put(ctx context.Context, body io.ReadSeeker, size int64, crc uint32) (upload.Committed, error) {
	a, err := r.d.putOne(ctx, r.key, false, r.opts.ContentType, r.opts.ContentEncoding, r.opts.Metadata, body, crc)
	if err != nil {
		return upload.Committed{}, err
	}
	return committed(a), nil
}

func committed(a *storage.ObjectAttrs) upload.Committed {
	return upload.Committed{Key: a.Name, ETag: a.Etag, VersionID: strconv.FormatInt(a.Generation, 10)}
}

func (r *resumable) Start(ctx context.Context) error {
	r.session = &session{}
	ctx, r.cancel = context.WithCancel(context.WithValue(ctx, sessionKey{}, r.session))
	r.w = r.d.writer(ctx, r.key, false, r.opts.ContentType, r.opts.ContentEncoding, r.opts.Metadata)
	r.w.ChunkSize = int(r.opts.PartSize)
	return nil
}

// Part hands the part to the library's Writer, which copies it into its
// chunk buffer and sends a full chunk (blocking meanwhile).
func (r *resumable) Part(_ context.Context, _ int32, body io.ReadSeeker, _ int64, _ uint32) error {
	if _, err := io.Copy(r.w, body); err != nil {
		return classifyWrite(err)
	}
	return nil
}

// Complete sends the last chunk, with the whole object's CRC32C (the
// library's automatic checksum), and checks the object GCS committed.
func (r *resumable) Complete(ctx context.Context, _ int32, size int64, crc uint32) (upload.Committed, error) {
	if err := r.w.Close(); err != nil {
		return upload.Committed{}, classifyWrite(err)
	}
	a := r.w.Attrs()
	if a.Size != size || a.CRC32C != crc {
		// Not what was written: take it away (only that generation).
		_ = r.d.b.Object(r.key).If(storage.Conditions{GenerationMatch: a.Generation}).Delete(context.WithoutCancel(ctx))
		return upload.Committed{}, fmt.Errorf("gcs committed %d bytes with CRC32C %08x, the writer sent %d with %08x", a.Size, a.CRC32C, size, crc)
	}
	r.cancel()
	return committed(a), nil
}

// Abort cancels the upload: the library's Writer stops, and the session it
// opened, if any, is cancelled with a DELETE of its URI (GCS answers 499).
func (r *resumable) Abort(ctx context.Context) error {
	r.cancel()
	_ = r.w.Close() // the cancelled upload's error
	uri := r.session.get()
	if uri == "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, uri, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Length", "0")
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

// A session records the URI of the resumable upload session opened with a
// request whose context carries it (sessionKey).
type session struct {
	mu  sync.Mutex
	uri string
}

type sessionKey struct{}

func (s *session) set(uri string) {
	s.mu.Lock()
	s.uri = uri
	s.mu.Unlock()
}

func (s *session) get() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.uri
}

// sessions is the client's transport: it records the Location of a
// resumable upload's initiation in the session its context carries.
type sessions struct{ base http.RoundTripper }

func (t sessions) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost || resp.StatusCode != http.StatusOK || req.URL.Query().Get("uploadType") != "resumable" {
		return resp, err
	}
	if s, ok := req.Context().Value(sessionKey{}).(*session); ok {
		s.set(resp.Header.Get("Location"))
	}
	return resp, err
}
