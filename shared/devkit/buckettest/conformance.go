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
	"io"
	"math/rand/v2"
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
)

// Store is what the suite needs of a backend: a Bucket's API, and the calls
// it inspects the store with.
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
	Store  Store
	Bucket string
	// UploadsByKeyOnly: the store lists incomplete multipart uploads only by
	// exact object key (MinIO). A ListMultipartUploads prefix that is no
	// object's key, or none at all, lists nothing.
	UploadsByKeyOnly bool
	// VerifiesChecksums: the store refuses a body whose x-amz-checksum-crc32c
	// does not match it (S3 and MinIO; moto stores whatever it is sent).
	VerifiesChecksums bool
}

// FakeBackend is a fresh in-memory Fake with one bucket.
func FakeBackend(t *testing.T) Backend {
	return Backend{Store: NewFake("conformance"), Bucket: "conformance", VerifiesChecksums: true}
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
		return Backend{Store: c, Bucket: newBucket(t, c)}
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
		return Backend{Store: c, Bucket: newBucket(t, c), UploadsByKeyOnly: true, VerifiesChecksums: true}
	}
}

// newBucket creates a bucket named after the test (lower-case letters,
// digits and hyphens only, as every store accepts) and returns its name.
func newBucket(t *testing.T, c *s3.Client) string {
	t.Helper()
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

// RunConformance runs every scenario against a fresh Backend from newBackend.
func RunConformance(t *testing.T, newBackend func(t *testing.T) Backend) {
	for _, s := range []struct {
		name string
		run  func(*testing.T, func(*testing.T) Backend)
	}{
		{"PutGetDelete", testPutGetDelete},
		{"GetMissing", testGetMissing},
		{"GetBounded", testGetBounded},
		{"HeadMetadata", testHeadMetadata},
		{"NoSuchBucket", testNoSuchBucket},
		{"List", testList},
		{"DeleteStale", testDeleteStale},
		{"Prefix", testPrefix},
		{"ExpectedOwner", testExpectedOwner},
		{"WriterSmall", testWriterSmall},
		{"WriterMultipart", testWriterMultipart},
		{"WriterCancel", testWriterCancel},
		{"WriterAbort", testWriterAbort},
		{"WriterFailure", testWriterFailure},
		{"AbortIncomplete", testAbortIncomplete},
		{"ChecksumVerified", testChecksumVerified},
	} {
		t.Run(s.name, func(t *testing.T) { s.run(t, newBackend) })
	}
}

// harness is one scenario's store, seen through Faults.
type harness struct {
	t      *testing.T
	ctx    context.Context
	store  Store
	name   string
	faults *Faults
	b      *bucket.Bucket
	be     Backend
}

func newHarness(t *testing.T, newBackend func(*testing.T) Backend, opts bucket.Options) *harness {
	t.Helper()
	be := newBackend(t)
	f := &Faults{}
	return &harness{t: t, ctx: t.Context(), store: be.Store, name: be.Bucket, faults: f, b: bucket.New(f.Wrap(be.Store), be.Bucket, opts), be: be}
}

// stored returns an object's bytes and attributes straight from the store.
func (h *harness) stored(key string) ([]byte, *s3.GetObjectOutput) {
	h.t.Helper()
	out, err := h.store.GetObject(h.ctx, &s3.GetObjectInput{Bucket: &h.name, Key: &key})
	if err != nil {
		h.t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return b, out
}

// absent fails the test if key exists.
func (h *harness) absent(key string) {
	h.t.Helper()
	_, err := h.store.HeadObject(h.ctx, &s3.HeadObjectInput{Bucket: &h.name, Key: &key})
	var nf *types.NotFound
	if !errors.As(err, &nf) {
		h.t.Errorf("HeadObject %s = %v, want NotFound", key, err)
	}
}

// keys lists every key of the bucket from the store.
func (h *harness) keys() []string {
	h.t.Helper()
	var out []string
	p := s3.NewListObjectsV2Paginator(h.store, &s3.ListObjectsV2Input{Bucket: &h.name})
	for p.HasMorePages() {
		page, err := p.NextPage(h.ctx)
		if err != nil {
			h.t.Fatal(err)
		}
		for _, o := range page.Contents {
			out = append(out, aws.ToString(o.Key))
		}
	}
	return out
}

// openUploads lists the bucket's incomplete multipart uploads, one key per
// upload. A store that lists uploads only by key (MinIO) is also asked
// about each of keys (full keys): its listing of the whole bucket shows only
// the uploads this server process started (an in-memory cache).
func (h *harness) openUploads(keys ...string) []string {
	h.t.Helper()
	seen := map[string]bool{}
	var open []string
	prefixes := []string{""}
	if h.be.UploadsByKeyOnly {
		prefixes = append(prefixes, keys...)
	}
	for _, prefix := range prefixes {
		in := &s3.ListMultipartUploadsInput{Bucket: &h.name, Prefix: &prefix}
		for {
			out, err := h.store.ListMultipartUploads(h.ctx, in)
			if err != nil {
				h.t.Fatal(err)
			}
			for _, u := range out.Uploads {
				if id := aws.ToString(u.UploadId); !seen[id] && (prefix == "" || aws.ToString(u.Key) == prefix) {
					seen[id] = true
					open = append(open, aws.ToString(u.Key))
				}
			}
			if !aws.ToBool(out.IsTruncated) {
				break
			}
			in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
		}
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
		if _, out := h.stored(key); aws.ToString(out.ContentType) != "application/json" {
			t.Errorf("stored content type %q", aws.ToString(out.ContentType))
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
	for _, want := range []string{"s3://" + h.name + "/" + key, "100 bytes", "99"} {
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
	var nsk *types.NoSuchKey
	if !errors.As(err, &nsk) {
		t.Errorf("the SDK's error is not wrapped: %v", err)
	}
	if want := "s3://" + h.name + "/dir/missing"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %s", err, want)
	}
	if bucket.IsNotFound(nil) || bucket.IsNotFound(ErrInjected) {
		t.Error("IsNotFound of nil or another error")
	}
}

func testNoSuchBucket(t *testing.T, nb func(*testing.T) Backend) {
	h := newHarness(t, nb, bucket.Options{})
	b := bucket.New(h.store, h.name+"-missing", bucket.Options{})
	for _, tc := range []struct {
		op  string
		run func() error
	}{
		{"Put", func() error { return b.Put(h.ctx, "k", []byte("x"), "text/plain") }},
		{"Get", func() error { _, err := b.Get(h.ctx, "k", readLimit); return err }},
		{"List", func() error { _, err := b.List(h.ctx, ""); return err }},
		{"DeleteStale", func() error { return b.DeleteStale(h.ctx, "", nil) }},
	} {
		err := tc.run()
		if !errors.Is(err, bucket.ErrNoSuchBucket) || bucket.IsNotFound(err) {
			t.Errorf("%s in a missing bucket = %v, want ErrNoSuchBucket", tc.op, err)
		}
		if err != nil && !strings.Contains(err.Error(), h.name+"-missing") {
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
		objs, err := h.b.List(h.ctx, tc.prefix)
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
	if s.Prefix() != "acct/" || s.WithPrefix("x/").Prefix() != "acct/x/" || h.b.Prefix() != "" || s.Name() != h.name {
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
	objs, err := s.List(h.ctx, "x/")
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
// set, and never when unset (an empty header would be refused).
func testExpectedOwner(t *testing.T, nb func(*testing.T) Backend) {
	for _, owner := range []string{Owner, ""} {
		t.Run(fmt.Sprintf("owner=%q", owner), func(t *testing.T) {
			h := newHarness(t, nb, bucket.Options{ExpectedOwner: owner})
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
