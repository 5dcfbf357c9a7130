// Package gcs is the Google Cloud Storage driver of a bucket.Bucket, over
// GCS's JSON API (api.go says why on net/http).
//
// Its guarantees, beside S3's:
//   - an object of at most one part is one upload request carrying its
//     CRC32C, which GCS verifies;
//   - a larger one is a resumable upload of the Writer's parts (its
//     reused, bounded buffers), one request per part in order, one in
//     flight; the request that finishes it carries the whole object's
//     CRC32C, which GCS verifies, and the Writer compares the committed
//     object's size and CRC32C with its own too;
//   - an aborted upload's session is cancelled (DELETE of its URI, which
//     GCS answers 499), so nothing of it stays; a killed run's session
//     cannot be listed or found by anyone and expires a week after it
//     began, so AbortIncomplete has nothing to do;
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
	"hash/crc32"
	"io"
	"maps"
	"net/http"
	"strings"

	"golang.org/x/oauth2"

	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/upload"
)

// Config is how to reach Google Cloud Storage.
type Config struct {
	// Endpoint is the JSON API's base URL: "" for Google's
	// (https://storage.googleapis.com/storage/v1/), or another's
	// (EndpointAt: a Private Service Connect endpoint, an emulator).
	Endpoint string
	// TokenSource authenticates every request (an access token for the
	// customer's service account); nil sends none, for an emulator.
	TokenSource oauth2.TokenSource
	// Transport carries the requests: nil is a clone of
	// http.DefaultTransport; a destination's custom endpoint goes through a
	// guarded one.
	Transport http.RoundTripper
}

// DefaultEndpoint is Google's JSON API.
const DefaultEndpoint = "https://storage.googleapis.com/storage/v1/"

// EndpointAt is the JSON API's base URL on a host (a destination's custom
// endpoint, https://host[:port]: a Private Service Connect endpoint, or an
// emulator); "" for Google's.
func EndpointAt(host string) string {
	if host == "" {
		return ""
	}
	return strings.TrimSuffix(host, "/") + "/storage/v1/"
}

// Client is a GCS JSON API client.
type Client struct {
	hc     *http.Client
	base   string // .../storage/v1/
	upload string // .../upload/storage/v1/
}

// NewClient returns a client for cfg. It looks for no default
// credentials: what authenticates it is cfg.TokenSource alone.
func NewClient(_ context.Context, cfg Config) (*Client, error) {
	rt := cfg.Transport
	if rt == nil {
		rt = http.DefaultTransport.(*http.Transport).Clone()
	}
	if cfg.TokenSource != nil {
		rt = &oauth2.Transport{Source: oauth2.ReuseTokenSource(nil, cfg.TokenSource), Base: rt}
	}
	base := cfg.Endpoint
	if base == "" {
		base = DefaultEndpoint
	}
	base = strings.TrimSuffix(base, "/") + "/"
	root, ok := strings.CutSuffix(base, "storage/v1/")
	if !ok {
		return nil, errors.New("gcs: the endpoint " + base + " is not a JSON API base URL (…/storage/v1/)")
	}
	return &Client{hc: &http.Client{Transport: rt}, base: base, upload: root + "upload/storage/v1/"}, nil
}

// Close releases the client's idle connections.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// HTTP is the client's HTTP client (authenticated as the Client is), for
// what a Bucket does not do (a test creating buckets).
func (c *Client) HTTP() *http.Client { return c.hc }

// Attrs is an object's resource, as GCS keeps it.
func (c *Client) Attrs(ctx context.Context, bucketName, key string) (*Object, error) {
	o, err := c.attrs(ctx, bucketName, key)
	return o, classify(err)
}

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
	return &driver{c: c, name: name, opts: opts}
}

type driver struct {
	c    *Client
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

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Put is one upload request carrying body's CRC32C, which GCS verifies.
func (d *driver) Put(ctx context.Context, key string, body []byte, o bucket.PutOptions) error {
	obj := newObject{Name: key, ContentType: o.ContentType, Metadata: d.metadata(o.Metadata)}
	_, err := d.c.insert(ctx, d.name, obj, o.IfAbsent, d.opts.KMSKeyName, bytes.NewReader(body), int64(len(body)), crc32.Checksum(body, castagnoli))
	return classifyWrite(err)
}

func (d *driver) Head(ctx context.Context, key string) (bucket.Info, error) {
	a, err := d.c.attrs(ctx, d.name, key)
	if err != nil {
		return bucket.Info{}, classify(err)
	}
	md := make(map[string]string, len(a.Metadata))
	for k, v := range a.Metadata {
		md[strings.ToLower(k)] = v
	}
	return bucket.Info{Size: a.Size, ContentType: a.ContentType, Metadata: md, CRC32C: a.CRC32C}, nil
}

// Get reads the object, or the part of it rng names. daybook writes no
// object with a Content-Encoding, so GCS transcodes none of its own; a
// planted gzip-encoded one is read decompressed, within the Bucket's bound
// all the same.
func (d *driver) Get(ctx context.Context, key string, rng bucket.Range) (io.ReadCloser, int64, error) {
	body, size, err := d.c.media(ctx, d.name, key, rng)
	return body, size, classify(err)
}

func (d *driver) Delete(ctx context.Context, key string) error {
	return classify(d.c.remove(ctx, d.name, key, nil))
}

func (d *driver) List(ctx context.Context, prefix string, fn func(bucket.Object) error) error {
	err := d.c.list(ctx, d.name, prefix, "", func(p *listPage) error {
		for _, o := range p.Items {
			if err := fn(bucket.Object{Key: o.Name, Size: o.Size}); err != nil {
				return err
			}
		}
		return nil
	})
	return classifyWrite(err) // a listing's 404 is the bucket's
}

func (d *driver) Dirs(ctx context.Context, prefix string, fn func(string) error) error {
	err := d.c.list(ctx, d.name, prefix, "/", func(p *listPage) error {
		for _, cp := range p.Prefixes {
			if err := fn(strings.TrimSuffix(strings.TrimPrefix(cp, prefix), "/")); err != nil {
				return err
			}
		}
		return nil
	})
	return classifyWrite(err)
}

// Deletes is how many of DeleteKeys' deletes run at once: GCS's JSON API
// deletes one object per request (its batch endpoint is a multipart of
// such requests).
const Deletes = 8

func (d *driver) DeleteKeys(ctx context.Context, keys []string) error {
	return bucket.DeleteEach(ctx, keys, Deletes, d.Delete)
}

// AbortIncomplete has nothing to abort: a resumable upload session is
// known only to whoever started it (its URI), is never listed, is
// invisible in the bucket, and expires a week after it began. The Writer
// cancels its own sessions when it fails.
func (d *driver) AbortIncomplete(context.Context, string, []string) ([]string, error) {
	return nil, nil
}

// ChunkAlign is the multiple of which every request of a resumable upload
// but the last must be.
const ChunkAlign = 256 << 10

// Protocol is a resumable upload: one part in flight, in order, each a
// multiple of ChunkAlign.
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
	var ge *Error
	if errors.As(err, &ge) {
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
	var ge *Error
	if errors.As(err, &ge) && ge.Code == http.StatusNotFound {
		return &bucket.KindError{Kind: bucket.ErrNoSuchBucket, Err: err}
	}
	return classify(err)
}
