// Package buckettest is test support for shared/bucket, modelled on
// go-cloud's drivertest and thanos' objtesting: RunConformance is the one
// suite every store a Bucket talks to must pass (the in-memory Fake, moto
// and MinIO), covering both the object calls and the streaming
// upload.Writer; where a store legitimately differs, its Backend says so
// and the scenario checks that store's behaviour;
// Faults fails chosen calls for crash tests. Only tests import it.
package buckettest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/devkit/minioserver"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/upload"
)

// Store is what the suite needs of an S3 backend: a Bucket's API, and the
// calls it inspects the store with.
type Store interface {
	bucket.API
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	ListMultipartUploads(ctx context.Context, in *s3.ListMultipartUploadsInput, optFns ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error)
	ListParts(ctx context.Context, in *s3.ListPartsInput, optFns ...func(*s3.Options)) (*s3.ListPartsOutput, error)
}

var _ Store = (*s3.Client)(nil)

// Backend is one store the suite runs against, with an existing, empty
// bucket that belongs to the test, and how the store differs from S3.
type Backend struct {
	// Store names the kind of store: "s3", "gcs" or "azure".
	Store string
	// Open returns the Bucket under test with f's hooks around its calls:
	// on an S3 backend around the S3 calls (Faults.Wrap), on another around
	// the driver's (Faults.WrapDriver, each named by the S3 call it stands
	// for). opts are S3's (an S3 backend's expected owner, checksums and
	// attributes); Attrs are the other stores' (see attributes.go).
	Open func(f *Faults, opts bucket.Options, attrs Attrs) *bucket.Bucket
	// Missing is a Bucket of a bucket that does not exist.
	Missing *bucket.Bucket
	// Inspect sees the store directly, not through a Bucket.
	Inspect Inspector
	// SampleAttrs are attributes of the store's forms (its key's name, its
	// tags) for the Attributes case.
	SampleAttrs Attrs
	// How the store differs from S3, in words, each empty where it does
	// not: the cases that meet a difference check the store's own
	// behaviour and name it.
	Differences
	// note records a difference a case named (RunConformance sets it).
	note func(why string)
}

// Differences are how a store differs from S3, each in words; empty is no
// difference.
type Differences struct {
	// UploadsByKeyOnly: the store lists incomplete multipart uploads only by
	// exact object key (MinIO). A ListMultipartUploads prefix that is no
	// object's key, or none at all, lists nothing.
	UploadsByKeyOnly string
	// ChecksumsUnverified: the store does not refuse a body whose checksum
	// does not match it (moto stores whatever it is sent).
	ChecksumsUnverified string
	// NoOwner: the store has no expected-owner header.
	NoOwner string
	// NotMultipart: the store's upload in parts is not S3's multipart upload
	// (no ETag "-N", no checksum modes, no full-object checksum type).
	NotMultipart string
	// UploadsUnlisted: the store's incomplete uploads cannot be listed (or
	// so, aborted) by anyone but their writer.
	UploadsUnlisted string
	// UploadsKept: an aborted upload's parts stay (invisible) until the
	// store garbage-collects them.
	UploadsKept string
	// MissingBucketReads: a read in a missing bucket is a missing object
	// (ErrNotFound), not ErrNoSuchBucket.
	MissingBucketReads string
	// AttrsUnkept: the store (an emulator) does not keep what Attrs names
	// that the cloud keeps; the case checks the requests carried it
	// (Inspector.Sent).
	AttrsUnkept string
	// NoEncryption: the store refuses encryption headers (a MinIO with no
	// KMS); the case writes tags alone.
	NoEncryption string
	// MultipartBucketKey: the store drops the S3 Bucket Key flag of an
	// object written in parts (moto).
	MultipartBucketKey string
	// ObjectChecksum: the store keeps another whole-object checksum than
	// S3's CRC32C (Stored.MD5 instead of Stored.CRC32C).
	ObjectChecksum string
}

// Stored is an object as the store keeps it.
type Stored struct {
	Data                         []byte
	ContentType, ContentEncoding string
	// Metadata is the user metadata, keys lower-cased.
	Metadata map[string]string
	ETag     string
	// CRC32C (base64) and MD5 (base64) are the whole-object checksums the
	// store keeps, "" where it keeps none; ChecksumType is S3's
	// (FULL_OBJECT or COMPOSITE).
	CRC32C, MD5, ChecksumType string
	// Attrs are the store's attributes of the object that daybook sets
	// (encryption, tags, ACL).
	Attrs Attrs
}

// Inspector sees a backend's store directly. Keys are full keys.
type Inspector interface {
	// Object returns the object at key, ok false when there is none.
	Object(ctx context.Context, key string) (o Stored, ok bool, err error)
	// Keys lists every key of the bucket, in order.
	Keys(ctx context.Context) ([]string, error)
	// OpenUploads lists the incomplete uploads the store shows, one key per
	// upload; byKey are keys to ask about one by one (a store that lists
	// uploads only by key).
	OpenUploads(ctx context.Context, byKey ...string) ([]string, error)
	// StartUpload leaves an incomplete upload of key, as a run that died
	// leaves one.
	StartUpload(ctx context.Context, key string) error
	// Parts are the sizes of the parts of key's incomplete upload, in
	// order; nil, nil where the store shows none.
	Parts(ctx context.Context, key, uploadID string) ([]int64, error)
	// WrongChecksums are the requests of an upload that carry a checksum,
	// each sent with a wrong one.
	WrongChecksums() []WrongChecksum
	// Sent is what the requests that wrote key carried of Attrs (for a
	// store that does not keep them: AttrsUnkept), ok false when the
	// backend records no requests.
	Sent(key string) (a Attrs, ok bool)
}

// WrongChecksum is one request sent with a checksum that does not match its
// body: Send returns that request's error, having left what a writer would
// leave to see what the store kept.
type WrongChecksum struct {
	Name string
	Send func(ctx context.Context, key string, data []byte) error
	// Unverified, when set, is how the store (an emulator) differs from
	// the cloud it stands for: it does not refuse this request.
	Unverified string
}

// FakeBackend is a fresh in-memory Fake with one bucket.
func FakeBackend(t *testing.T) Backend {
	f := NewFake("conformance")
	return s3Backend(f, "conformance", Differences{
		AttrsUnkept: "the in-memory fake keeps no encryption, ACL or tags, and records no requests: the case checks only that writes with them succeed",
	})
}

// sampleTags are tags of every store's form.
var sampleTags = map[string]string{"retention": "7y", "cost-center": "data eng"}

// tagging is tags as S3's x-amz-tagging query, in key order.
func tagging(tags map[string]string) string {
	v := url.Values{}
	for k, t := range tags {
		v.Set(k, t)
	}
	return strings.ReplaceAll(v.Encode(), "+", "%20")
}

// s3Backend is the Backend of an S3 store holding the bucket name.
func s3Backend(store Store, name string, d Differences) Backend {
	return Backend{
		Store: "s3",
		Open: func(f *Faults, opts bucket.Options, a Attrs) *bucket.Bucket {
			opts.Attributes = upload.S3Attributes{ServerSideEncryption: types.ServerSideEncryption(a.Encryption), KMSKeyID: a.KMSKey,
				ACL: types.ObjectCannedACL(a.ACL), Tagging: tagging(a.Tags)}
			return bucket.New(f.Wrap(store), name, opts)
		},
		SampleAttrs: Attrs{Encryption: "aws:kms", KMSKey: "arn:aws:kms:us-east-1:123456789012:key/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b",
			BucketKey: true, ACL: "bucket-owner-full-control", Tags: sampleTags},
		Missing:     bucket.New(store, name+"-missing", bucket.Options{}),
		Inspect:     &s3Inspector{store: store, name: name, byKeyOnly: d.UploadsByKeyOnly != ""},
		Differences: d,
	}
}

var bucketSeq atomic.Int64

// MotoBackend returns a constructor of fresh buckets on srv, named after the test.
func MotoBackend(srv **motoserver.Server) func(t *testing.T) Backend {
	return func(t *testing.T) Backend {
		t.Helper()
		cfg, err := (*srv).Config(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		c := awsclient.NewS3(cfg)
		return s3Backend(c, newBucket(t, c), Differences{
			ChecksumsUnverified: "moto stores whatever checksum a request carries, unchecked; the suite recomputes checksums itself",
			MultipartBucketKey:  "moto drops the Bucket Key flag of a multipart upload (S3 keeps it; package upload's tests check it is sent)",
		})
	}
}

// MinIOBackend returns a constructor of fresh buckets on srv, named after
// the test.
func MinIOBackend(srv **minioserver.Server) func(t *testing.T) Backend {
	return func(t *testing.T) Backend {
		t.Helper()
		cfg, err := (*srv).Config(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		c := awsclient.NewS3(cfg)
		return s3Backend(c, newBucket(t, c), Differences{
			UploadsByKeyOnly: "MinIO lists incomplete multipart uploads only by exact key: AbortIncomplete finds those at the keys it is given",
			NoEncryption:     "this MinIO runs with no KMS, so it refuses SSE-KMS and SSE-S3 headers: the case writes with the ACL and tags alone",
		})
	}
}

// BucketName is a fresh bucket name for t (lower-case letters, digits and
// hyphens only, 3 to 63 of them, as every store accepts).
func BucketName(t *testing.T) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, t.Name())
	name = fmt.Sprintf("c%d-%s", bucketSeq.Add(1), name)
	name = strings.TrimRight(name[:min(len(name), 63)], "-")
	for strings.Contains(name, "--") { // Azure refuses consecutive hyphens
		name = strings.ReplaceAll(name, "--", "-")
	}
	return name
}

// newBucket creates a bucket named after the test and returns its name.
func newBucket(t *testing.T, c *s3.Client) string {
	t.Helper()
	name := BucketName(t)
	if _, err := c.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: &name}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	return name
}

// ErrInjected is the error the suite's Faults return.
var ErrInjected = errors.New("injected fault")

// Owner is the expected bucket owner the suite sends: moto's account, which
// moto does not check and the Fake ignores.
const Owner = "123456789012"

// Cases are the suite's cases, in order.
var Cases = []struct {
	Name string
	run  func(*testing.T, func(*testing.T) Backend)
}{
	{"PutGetDelete", testPutGetDelete},
	{"GetMissing", testGetMissing},
	{"GetBounded", testGetBounded},
	{"HeadMetadata", testHeadMetadata},
	{"NoSuchBucket", testNoSuchBucket},
	{"List", testList},
	{"ListBounded", testListBounded},
	{"DeleteStale", testDeleteStale},
	{"Prefix", testPrefix},
	{"PutIfAbsent", testPutIfAbsent},
	{"ExpectedOwner", testExpectedOwner},
	{"WriterSmall", testWriterSmall},
	{"WriterMultipart", testWriterMultipart},
	{"WriterCancel", testWriterCancel},
	{"WriterAbort", testWriterAbort},
	{"WriterFailure", testWriterFailure},
	{"AbortIncomplete", testAbortIncomplete},
	{"ChecksumVerified", testChecksumVerified},
	{"Attributes", testAttributes},
}

// RunConformance runs every case against a fresh Backend from newBackend,
// recording in table (when not nil) how each case went on this store:
// passed, or the differences it named.
func RunConformance(t *testing.T, store string, table *Table, newBackend func(t *testing.T) Backend) {
	for _, s := range Cases {
		t.Run(s.Name, func(t *testing.T) {
			defer func() { table.finish(store, s.Name, t.Failed()) }()
			s.run(t, func(t *testing.T) Backend {
				be := newBackend(t)
				be.note = func(why string) { table.note(store, s.Name, why) }
				return be
			})
		})
	}
}

// harness is one scenario's store, seen through Faults.
type harness struct {
	t      *testing.T
	ctx    context.Context
	faults *Faults
	b      *bucket.Bucket
	be     Backend
}

func newHarness(t *testing.T, newBackend func(*testing.T) Backend, opts bucket.Options) *harness {
	return newHarnessAttrs(t, newBackend, opts, Attrs{})
}

func newHarnessAttrs(t *testing.T, newBackend func(*testing.T) Backend, opts bucket.Options, attrs Attrs) *harness {
	t.Helper()
	be := newBackend(t)
	f := &Faults{}
	return &harness{t: t, ctx: t.Context(), faults: f, b: be.Open(f, opts, attrs), be: be}
}

// differs names how this store differs from S3 in what the case checks,
// when it does (why not empty): logged, and recorded in the table.
func (h *harness) differs(why string) bool {
	h.t.Helper()
	if why == "" {
		return false
	}
	h.t.Logf("differs from S3: %s", why)
	if h.be.note != nil {
		h.be.note(why)
	}
	return true
}

// stored returns an object straight from the store.
func (h *harness) stored(key string) Stored {
	h.t.Helper()
	o, ok, err := h.be.Inspect.Object(h.ctx, key)
	if err != nil {
		h.t.Fatalf("get %s: %v", key, err)
	}
	if !ok {
		h.t.Fatalf("get %s: not stored", key)
	}
	return o
}

// absent fails the test if key exists.
func (h *harness) absent(key string) {
	h.t.Helper()
	if _, ok, err := h.be.Inspect.Object(h.ctx, key); err != nil || ok {
		h.t.Errorf("%s: stored %v (%v), want absent", key, ok, err)
	}
}

// keys lists every key of the bucket from the store.
func (h *harness) keys() []string {
	h.t.Helper()
	keys, err := h.be.Inspect.Keys(h.ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	return keys
}

// openUploads lists the bucket's incomplete uploads, one key per upload. A
// store that lists uploads only by key (MinIO) is also asked about each of
// keys (full keys): its listing of the whole bucket shows only the uploads
// this server process started (an in-memory cache).
func (h *harness) openUploads(keys ...string) []string {
	h.t.Helper()
	open, err := h.be.Inspect.OpenUploads(h.ctx, keys...)
	if err != nil {
		h.t.Fatal(err)
	}
	return open
}

func (h *harness) put(keys ...string) {
	h.t.Helper()
	for _, k := range keys {
		if err := h.b.Put(h.ctx, k, []byte("body of "+k), "text/plain"); err != nil {
			h.t.Fatal(err)
		}
	}
}

func testPutGetDelete(t *testing.T, nb func(*testing.T) Backend) {
	h := newHarness(t, nb, bucket.Options{})
	const key = "a/b.json"
	for _, body := range []string{`{"v":1}`, `{"v":2,"replaced":true}`} {
		if err := h.b.Put(h.ctx, key, []byte(body), "application/json"); err != nil {
			t.Fatal(err)
		}
		got, err := h.b.Get(h.ctx, key, readLimit)
		if err != nil || string(got) != body {
			t.Fatalf("Get = %q, %v; want %q", got, err, body)
		}
		if ct := h.stored(key).ContentType; ct != "application/json" {
			t.Errorf("stored content type %q", ct)
		}
	}
	if err := h.b.Put(h.ctx, "empty", nil, "text/plain"); err != nil {
		t.Fatal(err)
	}
	if got, err := h.b.Get(h.ctx, "empty", 0); err != nil || len(got) != 0 {
		t.Fatalf("empty object: %q, %v", got, err)
	}
	if err := h.b.Delete(h.ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := h.b.Get(h.ctx, key, readLimit); !bucket.IsNotFound(err) {
		t.Fatalf("Get after Delete = %v, want not found", err)
	}
	if err := h.b.Delete(h.ctx, key); err != nil {
		t.Fatalf("Delete of an absent object = %v, want nil", err)
	}
}

// readLimit is the most bytes the suite's reads hold: more than any
// object it writes to read back.
const readLimit = 1 << 20

// testGetBounded: Get returns an object of up to its limit, and refuses a
// larger one with ErrTooLarge, naming the key and the limit.
func testGetBounded(t *testing.T, nb func(*testing.T) Backend) {
	h := newHarness(t, nb, bucket.Options{})
	const key = "marker"
	body := strings.Repeat("x", 100)
	if err := h.b.Put(h.ctx, key, []byte(body), "text/plain"); err != nil {
		t.Fatal(err)
	}
	if got, err := h.b.Get(h.ctx, key, 100); err != nil || string(got) != body {
		t.Fatalf("Get at the limit = %d bytes, %v", len(got), err)
	}
	_, err := h.b.Get(h.ctx, key, 99)
	if !errors.Is(err, bucket.ErrTooLarge) || bucket.IsNotFound(err) {
		t.Fatalf("Get over the limit = %v, want ErrTooLarge", err)
	}
	for _, want := range []string{h.b.URI(key), "100 bytes", "99"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := h.b.Get(h.ctx, "absent", 0); !bucket.IsNotFound(err) {
		t.Errorf("Get of a missing key with a limit = %v, want not found", err)
	}
}

func testGetMissing(t *testing.T, nb func(*testing.T) Backend) {
	h := newHarness(t, nb, bucket.Options{})
	_, err := h.b.Get(h.ctx, "dir/missing", readLimit)
	if !bucket.IsNotFound(err) || !errors.Is(err, bucket.ErrNotFound) || errors.Is(err, bucket.ErrNoSuchBucket) {
		t.Fatalf("Get of a missing key = %v, want ErrNotFound only", err)
	}
	var ke *bucket.KindError
	if !errors.As(err, &ke) || ke.Err == nil || errors.Is(ke.Err, bucket.ErrNotFound) {
		t.Errorf("the store's own error is not wrapped: %v", err)
	}
	if h.be.Store == "s3" {
		var nsk *types.NoSuchKey
		if !errors.As(err, &nsk) {
			t.Errorf("the SDK's error is not wrapped: %v", err)
		}
	}
	if want := h.b.URI("dir/missing"); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %s", err, want)
	}
	if bucket.IsNotFound(nil) || bucket.IsNotFound(ErrInjected) {
		t.Error("IsNotFound of nil or another error")
	}
}

func testNoSuchBucket(t *testing.T, nb func(*testing.T) Backend) {
	h := newHarness(t, nb, bucket.Options{})
	b := h.be.Missing
	for _, tc := range []struct {
		op  string
		run func() error
	}{
		{"Put", func() error { return b.Put(h.ctx, "k", []byte("x"), "text/plain") }},
		{"Get", func() error { _, err := b.Get(h.ctx, "k", readLimit); return err }},
		{"List", func() error { _, err := b.List(h.ctx, "", listLimit); return err }},
		{"DeleteStale", func() error { return b.DeleteStale(h.ctx, "", nil) }},
	} {
		err := tc.run()
		if tc.op == "Get" && h.differs(h.be.MissingBucketReads) {
			if !bucket.IsNotFound(err) {
				t.Errorf("Get in a missing bucket = %v, want ErrNotFound", err)
			}
			continue
		}
		if !errors.Is(err, bucket.ErrNoSuchBucket) || bucket.IsNotFound(err) {
			t.Errorf("%s in a missing bucket = %v, want ErrNoSuchBucket", tc.op, err)
		}
		if err != nil && !strings.Contains(err.Error(), b.Name()) {
			t.Errorf("%s: error %q does not name the bucket", tc.op, err)
		}
	}
}

func testList(t *testing.T, nb func(*testing.T) Backend) {
	h := newHarness(t, nb, bucket.Options{})
	h.put("p/c", "q/a", "p/a", "pa", "p/b/c")
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"p/", []string{"p/a", "p/b/c", "p/c"}},
		{"p", []string{"p/a", "p/b/c", "p/c", "pa"}},
		{"", []string{"p/a", "p/b/c", "p/c", "pa", "q/a"}},
		{"none/", nil},
	} {
		objs, err := h.b.List(h.ctx, tc.prefix, listLimit)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, o := range objs {
			got = append(got, o.Key)
			if o.Size != int64(len("body of "+o.Key)) {
				t.Errorf("List(%q): %s size %d", tc.prefix, o.Key, o.Size)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("List(%q) = %v, want %v", tc.prefix, got, tc.want)
		}
	}
}

// listLimit is the conformance tests' listing bound: far above what they store.
const listLimit = 10_000

// testListBounded: List and Dirs return everything up to the caller's
// limit, and one entry more is ErrTooMany naming the prefix and the limit;
// Dirs names the folders one level down, in order.
func testListBounded(t *testing.T, nb func(*testing.T) Backend) {
	h := newHarness(t, nb, bucket.Options{})
	h.put("p/a", "p/b", "p/c/x", "p/d/y/z", "p/e/z", "q/f/x")
	if objs, err := h.b.List(h.ctx, "p/", 5); err != nil || len(objs) != 5 {
		t.Fatalf("List(p/, 5) = %d objects, %v; want all 5", len(objs), err)
	}
	if dirs, err := h.b.Dirs(h.ctx, "p/", 3); err != nil || fmt.Sprint(dirs) != "[c d e]" {
		t.Fatalf("Dirs(p/, 3) = %v, %v; want [c d e]", dirs, err)
	}
	for _, tc := range []struct {
		op  string
		err error
	}{
		{"List", func() error { _, err := h.b.List(h.ctx, "p/", 4); return err }()},
		{"Dirs", func() error { _, err := h.b.Dirs(h.ctx, "p/", 2); return err }()},
	} {
		if !errors.Is(tc.err, bucket.ErrTooMany) {
			t.Errorf("%s over the limit = %v, want ErrTooMany", tc.op, tc.err)
			continue
		}
		if !strings.Contains(tc.err.Error(), h.b.URI("p/")) {
			t.Errorf("%s over the limit: %q does not name %s", tc.op, tc.err, h.b.URI("p/"))
		}
	}
}

func testDeleteStale(t *testing.T, nb func(*testing.T) Backend) {
	for _, tc := range []struct {
		name    string
		objects []string
		keep    []string
		want    []string // left in the bucket
		batches []int    // keys per DeleteObjects call
	}{
		{"nothing stale", []string{"p/a", "p/b"}, []string{"p/a", "p/b"}, []string{"p/a", "p/b"}, nil},
		{"stale under the prefix only", []string{"p/a", "p/b", "p/c/d", "q/x", "px"}, []string{"p/a"}, []string{"p/a", "px", "q/x"}, []int{2}},
		{"empty prefix", nil, []string{"p/a"}, nil, nil},
		{"more than one batch", append(numbered("p/stale-", 1001), "p/keep-1", "p/keep-2", "q/x"), []string{"p/keep-1", "p/keep-2"},
			[]string{"p/keep-1", "p/keep-2", "q/x"}, []int{1000, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nb, bucket.Options{})
			putMany(h, tc.objects)
			var batches []int
			h.faults.Set(func(c Call) error {
				if c.Op == OpDeleteObjects {
					batches = append(batches, len(c.Keys))
				}
				return nil
			}, nil)
			keep := map[string]bool{}
			for _, k := range tc.keep {
				keep[k] = true
			}
			if err := h.b.DeleteStale(h.ctx, "p/", keep); err != nil {
				t.Fatal(err)
			}
			if got := h.keys(); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("left %v, want %v", got, tc.want)
			}
			if fmt.Sprint(batches) != fmt.Sprint(tc.batches) {
				t.Errorf("DeleteObjects batches %v, want %v", batches, tc.batches)
			}
		})
	}
}

func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%05d", prefix, i)
	}
	return out
}

// putMany stores tiny objects with 8 writers in flight.
func putMany(h *harness, keys []string) {
	h.t.Helper()
	errs := make(chan error, len(keys))
	sem := make(chan struct{}, 8)
	for _, k := range keys {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- h.b.Put(h.ctx, k, []byte("x"), "text/plain")
		}()
	}
	for range keys {
		if err := <-errs; err != nil {
			h.t.Fatal(err)
		}
	}
}

func testPrefix(t *testing.T, nb func(*testing.T) Backend) {
	h := newHarness(t, nb, bucket.Options{})
	s := h.b.WithPrefix("acct/")
	if s.Prefix() != "acct/" || s.WithPrefix("x/").Prefix() != "acct/x/" || h.b.Prefix() != "" || s.Name() != h.b.Name() {
		t.Fatalf("prefixes %q %q %q", s.Prefix(), s.WithPrefix("x/").Prefix(), h.b.Prefix())
	}
	h.put("outside")
	if err := s.Put(h.ctx, "x/k", []byte("scoped"), "text/plain"); err != nil {
		t.Fatal(err)
	}
	if err := s.WithPrefix("x/").Put(h.ctx, "keep", []byte("kept"), "text/plain"); err != nil {
		t.Fatal(err)
	}
	w := s.NewWriter(h.ctx, "w", uploadOpts())
	if _, err := w.Write([]byte("written")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := h.keys(); fmt.Sprint(got) != "[acct/w acct/x/k acct/x/keep outside]" {
		t.Fatalf("stored keys %v", got)
	}
	if got, err := s.Get(h.ctx, "x/k", readLimit); err != nil || string(got) != "scoped" {
		t.Fatalf("scoped Get = %q, %v", got, err)
	}
	objs, err := s.List(h.ctx, "x/", listLimit)
	if err != nil || len(objs) != 2 || objs[0].Key != "x/k" || objs[1].Key != "x/keep" {
		t.Fatalf("scoped List = %+v, %v", objs, err)
	}
	if _, err := s.Get(h.ctx, "missing", readLimit); !bucket.IsNotFound(err) || !strings.Contains(err.Error(), "/acct/missing") {
		t.Errorf("scoped Get of a missing key = %v, want not found naming the full key", err)
	}
	if err := s.DeleteStale(h.ctx, "", map[string]bool{"x/keep": true}); err != nil {
		t.Fatal(err)
	}
	if got := h.keys(); fmt.Sprint(got) != "[acct/x/keep outside]" {
		t.Errorf("after a scoped DeleteStale: %v", got)
	}
	if err := s.Delete(h.ctx, "x/keep"); err != nil {
		t.Fatal(err)
	}
	h.absent("acct/x/keep")
}

// testExpectedOwner: the owner is sent on every call of every operation when
// set, and never when unset (an empty header would be refused). A store
// without an expected-owner header gets none, and every operation works.
func testExpectedOwner(t *testing.T, nb func(*testing.T) Backend) {
	for _, owner := range []string{Owner, ""} {
		t.Run(fmt.Sprintf("owner=%q", owner), func(t *testing.T) {
			h := newHarness(t, nb, bucket.Options{ExpectedOwner: owner})
			if h.differs(h.be.NoOwner) {
				owner = ""
			}
			var mu sync.Mutex
			sent := map[Op][]*string{}
			var failComplete atomic.Bool
			h.faults.Set(func(c Call) error {
				mu.Lock()
				sent[c.Op] = append(sent[c.Op], c.Owner)
				mu.Unlock()
				if c.Op == OpComplete && failComplete.Load() {
					return ErrInjected
				}
				return nil
			}, nil)
			ctx := h.ctx
			h.put("p/a", "p/stale")
			if _, err := h.b.Get(ctx, "p/a", readLimit); err != nil {
				t.Fatal(err)
			}
			if err := h.b.DeleteStale(ctx, "p/", map[string]bool{"p/a": true}); err != nil {
				t.Fatal(err)
			}
			if err := h.b.Delete(ctx, "p/a"); err != nil {
				t.Fatal(err)
			}
			// A multipart object, then one whose completion fails (an abort).
			for i, fail := range []bool{false, true} {
				failComplete.Store(fail)
				w := h.b.NewWriter(ctx, fmt.Sprint("big-", i), uploadOpts())
				if err := writeChunks(t, w, randomBytes(int(minPart+5), uint64(i))); err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); (err != nil) != fail {
					t.Fatalf("Close = %v", err)
				}
			}
			for _, op := range []Op{OpPut, OpGet, OpList, OpDeleteObjects, OpDelete, OpCreate, OpUploadPart, OpComplete, OpAbortMultipart} {
				if len(sent[op]) == 0 {
					t.Errorf("%s never called", op)
				}
				for i, o := range sent[op] {
					if (owner == "" && o != nil) || (owner != "" && aws.ToString(o) != owner) {
						t.Errorf("%s call %d: ExpectedBucketOwner %v, want %q", op, i+1, aws.ToString(o), owner)
					}
				}
			}
		})
	}
}

func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

// equalBytes reports a mismatch without printing megabytes.
func equalBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: stored %d bytes differ from the %d written", what, len(got), len(want))
	}
}
