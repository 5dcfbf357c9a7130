package upload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

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

// writeChunks writes data in uneven chunks, as an encoder would.
func writeChunks(t testing.TB, w *Writer, data []byte) error {
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

func checkResult(t *testing.T, r Result, data []byte, parts int) {
	t.Helper()
	want := crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))
	if r.CRC32CValue != want || r.CRC32C != crcBase64(want) {
		t.Errorf("CRC32C = %s (%08x), want %s (%08x)", r.CRC32C, r.CRC32CValue, crcBase64(want), want)
	}
	sum := sha256.Sum256(data)
	if r.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("SHA256 = %s, want %x", r.SHA256, sum)
	}
	if r.Bytes != int64(len(data)) {
		t.Errorf("Bytes = %d, want %d", r.Bytes, len(data))
	}
	if r.Parts != parts {
		t.Errorf("Parts = %d, want %d", r.Parts, parts)
	}
}

func TestCRC32CBase64(t *testing.T) {
	// Known vector: CRC-32C("123456789") = 0xE3069283.
	if got := crc32.Checksum([]byte("123456789"), castagnoli); got != 0xE3069283 {
		t.Fatalf("crc32c = %08x", got)
	}
	if got := crcBase64(0xE3069283); got != "4waSgw==" {
		t.Fatalf("base64 = %s", got)
	}
}

func TestPartSizeFor(t *testing.T) {
	const GiB, TiB = 1 << 30, 1 << 40
	tests := []struct {
		name          string
		partSize, max int64
		want          int64
	}{
		{"defaults", 0, 0, 16 * MiB},
		{"negative is default", -1, 0, 16 * MiB},
		{"below minimum", 1 * MiB, 0, 5 * MiB},
		{"minimum", 5 * MiB, 0, 5 * MiB},
		{"explicit", 8 * MiB, 0, 8 * MiB},
		{"file roll 256 MiB fits", 16 * MiB, 256 * MiB, 16 * MiB},
		{"exactly 10000 parts", 5 * MiB, 10000 * 5 * MiB, 5 * MiB},
		{"one byte over 10000 parts", 5 * MiB, 10000*5*MiB + 1, 6 * MiB},
		{"100 GiB", 5 * MiB, 100 * GiB, 11 * MiB},
		{"1 TiB", 16 * MiB, 1 * TiB, 105 * MiB},
		{"5 TiB (S3 maximum object)", 16 * MiB, 5 * TiB, 525 * MiB},
		{"above maximum part", 6 * GiB, 0, 5 * GiB},
		{"impossible object capped", 0, 100 * TiB, 5 * GiB},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PartSizeFor(tt.partSize, tt.max)
			if got != tt.want {
				t.Fatalf("PartSizeFor(%d, %d) = %d (%.2f MiB), want %d", tt.partSize, tt.max, got, float64(got)/MiB, tt.want)
			}
			if tt.max > 0 && tt.max <= MaxParts*MaxPartSize && (tt.max+got-1)/got > MaxParts {
				t.Fatalf("%d bytes need %d parts of %d", tt.max, (tt.max+got-1)/got, got)
			}
		})
	}
}

// What ends up in the store (bytes, parts, content type, metadata, stored
// checksums, nothing left after a failure or an abort) is checked by the
// conformance suite of shared/bucket (shared/devkit/buckettest), against an
// in-memory S3 and moto. The tests here check, against fakeS3, what the
// Writer sends and when: request fields, call counts, contexts, concurrency
// and memory.

// TestChecksumRequests: what each checksum mode asks the store to verify.
func TestChecksumRequests(t *testing.T) {
	data := randomBytes(int(3*MinPartSize+MinPartSize/2), 1)
	for _, tc := range []struct {
		name       string
		mode       ChecksumMode
		algorithm  bool // CreateMultipartUpload names CRC32C; parts carry theirs
		fullObject bool // created FULL_OBJECT; Complete carries the object's CRC32C and size
		putSum     bool // a small object's PutObject carries its CRC32C
	}{
		{"full object (default)", ChecksumFullObject, true, true, true},
		{"composite", ChecksumComposite, true, false, true},
		{"none", ChecksumNone, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			w := NewWriter(t.Context(), f, "b", "k", Options{PartSize: MinPartSize, Concurrency: 2, Checksums: tc.mode, ContentEncoding: "gzip"})
			if err := writeChunks(t, w, data); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			checkResult(t, w.Result(), data, 4) // computed locally whatever the mode
			if !bytes.Equal(f.objects["k"], data) {
				t.Fatal("assembled object differs")
			}
			cr, c := f.createIn, f.completeIn
			if (cr.ChecksumAlgorithm == types.ChecksumAlgorithmCrc32c) != tc.algorithm || (cr.ChecksumType == types.ChecksumTypeFullObject) != tc.fullObject {
				t.Errorf("create: algorithm %q type %q", cr.ChecksumAlgorithm, cr.ChecksumType)
			}
			if aws.ToString(cr.ContentEncoding) != "gzip" {
				t.Error("content encoding not sent")
			}
			for i, p := range c.MultipartUpload.Parts {
				if (p.ChecksumCRC32C != nil) != tc.algorithm {
					t.Errorf("part %d listed with checksum %v", i+1, aws.ToString(p.ChecksumCRC32C))
				}
			}
			if tc.fullObject {
				if c.ChecksumType != types.ChecksumTypeFullObject || aws.ToString(c.ChecksumCRC32C) != w.Result().CRC32C || aws.ToInt64(c.MpuObjectSize) != int64(len(data)) {
					t.Errorf("complete: type %q crc %v size %v", c.ChecksumType, aws.ToString(c.ChecksumCRC32C), aws.ToInt64(c.MpuObjectSize))
				}
			} else if c.ChecksumType != "" || c.ChecksumCRC32C != nil || c.MpuObjectSize != nil {
				t.Errorf("complete: full-object fields sent: type %q crc %v size %v", c.ChecksumType, aws.ToString(c.ChecksumCRC32C), c.MpuObjectSize)
			}

			small := NewWriter(t.Context(), f, "b", "small", Options{Checksums: tc.mode})
			if _, err := small.Write([]byte("tiny")); err != nil {
				t.Fatal(err)
			}
			if err := small.Close(); err != nil {
				t.Fatal(err)
			}
			if sum := f.putIn.ChecksumCRC32C; (sum != nil) != tc.putSum || (sum != nil && *sum != small.Result().CRC32C) {
				t.Errorf("PutObject checksum %v, Result %s", aws.ToString(sum), small.Result().CRC32C)
			}
		})
	}
}

// TestAbortUsesFreshContext: however an upload ends without Close
// succeeding, it is aborted exactly once, on a context that is not the
// caller's (which may be done) and has a deadline (AbortTimeout).
func TestAbortUsesFreshContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, f *fakeS3)
	}{
		{"part fails", func(t *testing.T, f *fakeS3) {
			f.failPart = 2
			w := NewWriter(t.Context(), f, "b", "k", Options{PartSize: MinPartSize, Concurrency: 2})
			_ = writeChunks(t, w, randomBytes(int(4*MinPartSize), 3))
			if err := w.Close(); !errors.Is(err, errInjected) {
				t.Fatalf("Close = %v", err)
			}
			if f.count("CompleteMultipartUpload") != 0 {
				t.Error("completed after a failed part")
			}
		}},
		{"complete fails", func(t *testing.T, f *fakeS3) {
			f.failComplete = true
			w := NewWriter(t.Context(), f, "b", "k", Options{PartSize: MinPartSize})
			if err := writeChunks(t, w, randomBytes(int(MinPartSize+1), 4)); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); !errors.Is(err, errInjected) {
				t.Fatalf("Close = %v", err)
			}
		}},
		{"context cancelled while parts are in flight", func(t *testing.T, f *fakeS3) {
			f.arrived = make(chan int32, 10)
			f.release = make(chan struct{})
			ctx, cancel := context.WithCancel(t.Context())
			w := NewWriter(ctx, f, "b", "k", Options{PartSize: MinPartSize, Concurrency: 2})
			if err := writeChunks(t, w, randomBytes(int(2*MinPartSize+1), 6)); err != nil { // parts 1 and 2 are in flight, held
				t.Fatal(err)
			}
			<-f.arrived
			<-f.arrived
			cancel() // the Lambda's deadline passes mid-stream
			if _, err := w.Write([]byte("more")); !errors.Is(err, context.Canceled) {
				t.Fatalf("Write after cancel = %v", err)
			}
			if err := w.Close(); !errors.Is(err, context.Canceled) {
				t.Fatalf("Close = %v", err)
			}
		}},
		{"explicit abort on a done context", func(t *testing.T, f *fakeS3) {
			w := NewWriter(t.Context(), f, "b", "k", Options{PartSize: MinPartSize})
			if err := writeChunks(t, w, randomBytes(int(2*MinPartSize+1), 7)); err != nil {
				t.Fatal(err)
			}
			done, cancel := context.WithCancel(t.Context())
			cancel()
			if err := w.Abort(done); err != nil {
				t.Fatal(err)
			}
			if err := w.Abort(t.Context()); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			tc.run(t, f)
			// fakeS3 refuses an abort without a deadline, so an open upload
			// here means the abort ran on the wrong context.
			if f.count("AbortMultipartUpload") != 1 || f.aborts[0] != nil || len(f.openUploads()) != 0 {
				t.Fatalf("%d abort calls, context errors %v, open uploads %v; want 1 on a live context, none open",
					f.count("AbortMultipartUpload"), f.aborts, f.openUploads())
			}
		})
	}
}

func TestFailedCreate(t *testing.T) {
	f := newFake()
	f.failCreate = true
	w := NewWriter(t.Context(), f, "b", "k", Options{PartSize: MinPartSize})
	err := writeChunks(t, w, randomBytes(int(MinPartSize+1), 5))
	if !errors.Is(err, errInjected) {
		t.Fatalf("Write = %v", err)
	}
	if w.Written() != MinPartSize {
		t.Fatalf("Written = %d", w.Written())
	}
	if err := w.Close(); !errors.Is(err, errInjected) {
		t.Fatalf("Close = %v", err)
	}
	if f.count("AbortMultipartUpload") != 0 || f.count("UploadPart") != 0 {
		t.Fatal("nothing to abort, yet calls were made")
	}
}

func TestCancelledBeforeMultipart(t *testing.T) {
	f := newFake()
	ctx, cancel := context.WithCancel(t.Context())
	w := NewWriter(ctx, f, "b", "k", Options{})
	if _, err := w.Write([]byte("small")); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := w.Close(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close = %v", err)
	}
	if len(f.ops) != 0 {
		t.Fatalf("calls after cancel: %v", f.ops)
	}
}

// TestConcurrencyBound holds every UploadPart until the test releases it,
// letting exactly Concurrency calls pile up before releasing one: the fake
// sees Concurrency calls in flight and never more, and Write blocks, so the
// bytes accepted stay within (Concurrency+1) parts of those acknowledged.
func TestConcurrencyBound(t *testing.T) {
	const conc, parts = 3, 12
	f := newFake()
	f.discard = true
	f.arrived = make(chan int32)
	f.release = make(chan struct{})
	w := NewWriter(t.Context(), f, "b", "k", Options{PartSize: MinPartSize, Concurrency: conc})
	data := randomBytes(int(parts*MinPartSize), 11)
	errc := make(chan error, 1)
	go func() {
		if err := writeChunks(t, w, data); err != nil {
			errc <- err
			return
		}
		errc <- w.Close()
	}()
	arrived, released, pending := 0, 0, 0
	var order []int32
	for released < parts {
		if pending < conc && arrived < parts {
			order = append(order, <-f.arrived)
			arrived++
			pending++
			continue
		}
		// conc calls are held: the writer is blocked in Write (or Close).
		if got, limit := w.Written(), int64(released+conc+1)*MinPartSize; got > limit {
			t.Fatalf("Written = %d with %d parts acknowledged, bound %d", got, released, limit)
		}
		f.release <- struct{}{}
		released++
		pending--
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if f.maxInflight != conc {
		t.Fatalf("max in-flight UploadPart = %d, want %d", f.maxInflight, conc)
	}
	seen := map[int32]bool{}
	for _, n := range order {
		seen[n] = true
	}
	for n := int32(1); n <= parts; n++ {
		if !seen[n] {
			t.Fatalf("part %d never sent; order %v", n, order)
		}
	}
	if w.Result().Parts != parts {
		t.Fatalf("Parts = %d", w.Result().Parts)
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	base := writerGoroutines()
	for i := range 5 {
		f := newFake()
		f.failPart = int32(i) // 0: no failure
		w := NewWriter(t.Context(), f, "b", "k", Options{PartSize: MinPartSize, Concurrency: 3})
		_ = writeChunks(t, w, randomBytes(int(5*MinPartSize+1), uint64(i)))
		_ = w.Close()
	}
	ctx, cancel := context.WithCancel(t.Context())
	w := NewWriter(ctx, newFake(), "b", "k", Options{PartSize: MinPartSize})
	_ = writeChunks(t, w, randomBytes(int(3*MinPartSize), 99))
	cancel()
	_ = w.Abort(t.Context())
	// Close and Abort wait for their goroutines; let the exiting ones finish
	// their last instructions.
	for range 1000 {
		if writerGoroutines() <= base {
			return
		}
		runtime.Gosched()
	}
	t.Fatalf("goroutines in package upload: %d before, %d after:\n%s", base, writerGoroutines(), allStacks())
}

// writerGoroutines counts the goroutines running code of this package
// other than the caller: the runtime's own (the one that runs cleanups, the
// upload arena's among them, starts at the first one queued) are not the
// Writer's to end.
func writerGoroutines() int {
	n := 0
	for i, g := range strings.Split(allStacks(), "\n\n") {
		if i > 0 && strings.Contains(g, "daybook/shared/upload.") { // the first is the caller's
			n++
		}
	}
	return n
}

func allStacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}
