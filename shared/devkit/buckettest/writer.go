package buckettest

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"sync"
	"testing"

	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/upload"
)

const minPart = upload.MinPartSize

// uploadOpts are the writer options of most scenarios: parts of the minimum
// size, two in flight.
func uploadOpts() upload.Options {
	return upload.Options{PartSize: minPart, Concurrency: 2}
}

// writeChunks writes data in uneven chunks, as an encoder would.
func writeChunks(t testing.TB, w *upload.Writer, data []byte) error {
	t.Helper()
	sizes := []int{1, 4096, 65536, 1 << 20, 3, 777777}
	for i := 0; len(data) > 0; i++ {
		n := min(sizes[i%len(sizes)], len(data))
		m, err := w.Write(data[:n])
		if err != nil {
			return err
		}
		if m != n {
			t.Fatalf("Write accepted %d of %d without error", m, n)
		}
		data = data[n:]
	}
	return nil
}

// checkResult compares a Result with the bytes the store holds: the store
// may not verify checksums (moto does not), so they are recomputed here.
func checkResult(t *testing.T, r upload.Result, key string, stored []byte, parts int) {
	t.Helper()
	want := crc32.Checksum(stored, castagnoli)
	if r.CRC32CValue != want || r.CRC32C != crcBase64(want) {
		t.Errorf("Result CRC32C %s (%08x), stored bytes have %s (%08x)", r.CRC32C, r.CRC32CValue, crcBase64(want), want)
	}
	if sum := sha256.Sum256(stored); r.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("Result SHA256 %s, stored bytes have %x", r.SHA256, sum)
	}
	if r.Bytes != int64(len(stored)) || r.Parts != parts || r.Key != key {
		t.Errorf("Result bytes %d parts %d key %s; stored %d bytes, want %d parts, key %s", r.Bytes, r.Parts, r.Key, len(stored), parts, key)
	}
}

// testWriterSmall: an object up to one part is one request (never a
// multipart upload), stored with its content type, metadata and checksum.
func testWriterSmall(t *testing.T, nb func(*testing.T) Backend) {
	for _, size := range []int{0, 1, 300 << 10, int(minPart)} { // exactly one part: still one request
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			h := newHarness(t, nb, bucket.Options{ExpectedOwner: Owner})
			key := "acct/events/dt=2026-01-02/part-00000.parquet"
			data := randomBytes(size, uint64(size)+21)
			opts := uploadOpts()
			opts.ContentType, opts.Metadata = "application/vnd.apache.parquet", map[string]string{"generation": "7"}
			w := h.b.NewWriter(h.ctx, key, opts)
			if err := writeChunks(t, w, data); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if n := h.faults.Count(OpCreate) + h.faults.Count(OpUploadPart); n != 0 {
				t.Errorf("%d multipart calls for %d bytes", n, size)
			}
			r := w.Result()
			st := h.stored(key)
			equalBytes(t, key, st.Data, data)
			checkResult(t, r, key, st.Data, 0)
			if r.ETag == "" || r.ETag != st.ETag {
				t.Errorf("Result ETag %q, stored %q", r.ETag, st.ETag)
			}
			if st.ContentType != opts.ContentType || st.Metadata["generation"] != "7" {
				t.Errorf("stored content type %q metadata %v", st.ContentType, st.Metadata)
			}
			checkObjectChecksum(h, st, r)
		})
	}
}

// checkObjectChecksum: the store keeps the whole object's checksum the
// request carried (S3, GCS: the CRC32C; Azure: the Content-MD5).
func checkObjectChecksum(h *harness, st Stored, r upload.Result) {
	h.t.Helper()
	if h.differs(h.be.ObjectChecksum) {
		if sum := md5.Sum(st.Data); st.MD5 != base64.StdEncoding.EncodeToString(sum[:]) {
			h.t.Errorf("stored Content-MD5 %q, the bytes have %x", st.MD5, sum)
		}
		return
	}
	if st.CRC32C != r.CRC32C {
		h.t.Errorf("stored CRC32C %q, want %s", st.CRC32C, r.CRC32C)
	}
}

// testWriterMultipart streams 3.5 parts in every checksum mode: the store
// holds the exact bytes, in 4 parts of the expected sizes (listed just
// before completion where the store shows them), with the content type and
// encoding; after Close the Writer is done.
func testWriterMultipart(t *testing.T, nb func(*testing.T) Backend) {
	for _, tc := range []struct {
		name string
		mode upload.ChecksumMode
	}{{"full object", upload.ChecksumFullObject}, {"composite", upload.ChecksumComposite}, {"none", upload.ChecksumNone}} {
		mode := tc.mode
		t.Run("checksums "+tc.name, func(t *testing.T) {
			h := newHarness(t, nb, bucket.Options{Checksums: mode})
			notMultipart := h.differs(h.be.NotMultipart)
			const key = "big.parquet"
			var mu sync.Mutex
			var parts, sent []int64
			h.faults.Set(func(c Call) error {
				switch c.Op {
				case OpUploadPart:
					mu.Lock()
					for int32(len(sent)) < c.Part {
						sent = append(sent, 0)
					}
					sent[c.Part-1] = c.Size
					mu.Unlock()
				case OpComplete:
					p, err := h.be.Inspect.Parts(h.ctx, c.Key, c.UploadID)
					if err != nil {
						return err
					}
					parts = p
				}
				return nil
			}, nil)
			data := randomBytes(int(3*minPart+minPart/2), 22)
			opts := uploadOpts()
			opts.ContentType, opts.ContentEncoding = "application/vnd.apache.parquet", "identity"
			w := h.b.NewWriter(h.ctx, key, opts)
			if err := writeChunks(t, w, data); err != nil {
				t.Fatal(err)
			}
			if w.Written() != int64(len(data)) {
				t.Fatalf("Written = %d, want %d", w.Written(), len(data))
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			r := w.Result()
			st := h.stored(key)
			equalBytes(t, key, st.Data, data)
			checkResult(t, r, key, st.Data, 4)
			if r.ETag != st.ETag || (!notMultipart && !strings.HasSuffix(strings.Trim(r.ETag, `"`), "-4")) {
				t.Errorf("Result ETag %s, stored %s", r.ETag, st.ETag)
			}
			if st.ContentType != opts.ContentType || st.ContentEncoding != "identity" {
				t.Errorf("stored content type %q encoding %q", st.ContentType, st.ContentEncoding)
			}
			want := []int64{minPart, minPart, minPart, minPart / 2}
			if fmt.Sprint(sent) != fmt.Sprint(want) {
				t.Errorf("parts sent: sizes %v, want %v", sent, want)
			}
			if parts == nil {
				h.differs(h.be.UploadsUnlisted)
			} else if fmt.Sprint(parts) != fmt.Sprint(want) {
				t.Errorf("parts the store held before completion: sizes %v, want %v", parts, want)
			}
			// Done: Abort does nothing, Write refuses, Close repeats nil.
			if err := w.Abort(h.ctx); err != nil || h.faults.Count(OpAbortMultipart) != 0 {
				t.Errorf("Abort after Close = %v, %d abort calls", err, h.faults.Count(OpAbortMultipart))
			}
			if _, err := w.Write([]byte("x")); !errors.Is(err, upload.ErrClosed) {
				t.Errorf("Write after Close = %v", err)
			}
			if err := w.Close(); err != nil {
				t.Errorf("second Close = %v", err)
			}
			// Stores compute this themselves (moto falls back to plain CRC32
			// without the python crc32c package), so it is only logged; a
			// store that verifies checksums keeps the full-object one sent.
			t.Logf("stored: checksum type %q crc32c %q md5 %q; ours %s", st.ChecksumType, st.CRC32C, st.MD5, r.CRC32C)
			switch {
			case notMultipart:
				// GCS keeps the whole object's CRC32C, which the last
				// request carried; Azure keeps none for a block list.
				if h.be.ObjectChecksum == "" && st.CRC32C != r.CRC32C {
					t.Errorf("stored CRC32C %q, want %s", st.CRC32C, r.CRC32C)
				}
			case h.be.ChecksumsUnverified == "" && mode == upload.ChecksumFullObject:
				if st.ChecksumType != "FULL_OBJECT" || st.CRC32C != r.CRC32C {
					t.Errorf("stored checksum %s %q, want FULL_OBJECT %s", st.ChecksumType, st.CRC32C, r.CRC32C)
				}
			}
		})
	}
}

// testWriterCancel: the caller's context ends mid-stream (a Lambda's
// deadline); the upload is aborted all the same and nothing is left.
func testWriterCancel(t *testing.T, nb func(*testing.T) Backend) {
	h := newHarness(t, nb, bucket.Options{})
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	w := h.b.NewWriter(ctx, "cancelled", uploadOpts())
	if err := writeChunks(t, w, randomBytes(int(3*minPart+1), 23)); err != nil {
		t.Fatal(err)
	}
	unlisted := h.differs(h.be.UploadsUnlisted)
	if open := h.openUploads("cancelled"); len(open) != 1 && !unlisted {
		t.Fatalf("multipart uploads in progress before cancel: %v, want 1", open)
	}
	cancel()
	if _, err := w.Write([]byte("more")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write after cancel = %v", err)
	}
	if err := w.Close(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close = %v", err)
	}
	if err := w.Abort(h.ctx); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if open := h.openUploads("cancelled"); !h.differs(h.be.UploadsKept) && len(open) != 0 || h.faults.Count(OpComplete) != 0 {
		t.Fatalf("after cancel: uploads %v, %d completions", open, h.faults.Count(OpComplete))
	}
	h.absent("cancelled")
	if (w.Result() != upload.Result{}) {
		t.Error("Result after a cancelled upload is not zero")
	}
}

// testWriterAbort is go-cloud's "not Close means not committed": an explicit
// Abort, on a context already done, leaves nothing; it is idempotent.
func testWriterAbort(t *testing.T, nb func(*testing.T) Backend) {
	h := newHarness(t, nb, bucket.Options{ExpectedOwner: Owner})
	w := h.b.NewWriter(h.ctx, "abandoned", uploadOpts())
	if err := writeChunks(t, w, randomBytes(int(2*minPart+1), 24)); err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(h.ctx)
	cancel()
	if err := w.Abort(done); err != nil {
		t.Fatal(err)
	}
	if open := h.openUploads("abandoned"); len(open) != 0 && !h.differs(h.be.UploadsKept) {
		t.Fatalf("uploads left: %v", open)
	}
	h.absent("abandoned")
	if err := w.Close(); !errors.Is(err, upload.ErrAborted) {
		t.Errorf("Close after Abort = %v", err)
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, upload.ErrAborted) {
		t.Errorf("Write after Abort = %v", err)
	}
	if err := w.Abort(h.ctx); err != nil || h.faults.Count(OpAbortMultipart) != 1 {
		t.Errorf("second Abort = %v after %d abort calls, want 1", err, h.faults.Count(OpAbortMultipart))
	}
}

// testWriterFailure: a failed call of a multipart upload aborts it once;
// nothing is visible, the first error sticks.
func testWriterFailure(t *testing.T, nb func(*testing.T) Backend) {
	for _, tc := range []struct {
		name string
		fail func(Call) bool
		size int
	}{
		{"part 2 fails", func(c Call) bool { return c.Op == OpUploadPart && c.Part == 2 }, int(4 * minPart)},
		{"complete fails", func(c Call) bool { return c.Op == OpComplete }, int(minPart + 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nb, bucket.Options{})
			h.faults.Set(Once(ErrInjected, tc.fail), nil)
			w := h.b.NewWriter(h.ctx, "k", uploadOpts())
			werr := writeChunks(t, w, randomBytes(tc.size, 3)) // may or may not see the failure yet
			if werr != nil && !errors.Is(werr, ErrInjected) {
				t.Fatalf("Write = %v", werr)
			}
			if err := w.Close(); !errors.Is(err, ErrInjected) {
				t.Fatalf("Close = %v, want the injected failure", err)
			}
			if open := h.openUploads("k"); len(open) != 0 && !h.differs(h.be.UploadsKept) || h.faults.Count(OpAbortMultipart) != 1 {
				t.Fatalf("uploads left %v after %d abort calls, want none after 1", open, h.faults.Count(OpAbortMultipart))
			}
			h.absent("k")
			if _, err := w.Write([]byte("x")); !errors.Is(err, ErrInjected) {
				t.Errorf("Write after the failure = %v", err)
			}
			if err := w.Close(); !errors.Is(err, ErrInjected) {
				t.Errorf("Close again = %v", err)
			}
			if (w.Result() != upload.Result{}) {
				t.Error("Result after a failure is not zero")
			}
			if err := w.Abort(h.ctx); err != nil || h.faults.Count(OpAbortMultipart) != 1 {
				t.Errorf("Abort after the failure = %v, %d abort calls", err, h.faults.Count(OpAbortMultipart))
			}
		})
	}
}
