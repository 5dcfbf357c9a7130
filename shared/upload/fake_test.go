package upload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sort"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// fakeS3 is an in-memory S3API for the Writer's white-box tests: it records
// what the Writer sends, checks what real S3 would check (per-part CRC32C,
// consecutive part numbers from 1, minimum part size, full-object CRC32C and
// size), and lets tests inject failures and hold UploadPart calls. What ends
// up stored is the conformance suite's (shared/devkit/buckettest), run on an
// S3-like fake and on moto.
type fakeS3 struct {
	discard bool // keep no bytes (benchmarks)

	// Failure injection.
	failPart     int32 // UploadPart of this part number fails
	failComplete bool
	failCreate   bool

	// If arrived is set, UploadPart sends its part number on arrival; if
	// release is set, it then waits for a value (or ctx) before answering.
	arrived chan int32
	release chan struct{}

	mu          sync.Mutex
	ops         []string
	objects     map[string][]byte
	uploads     map[string]*fakeUpload
	nextID      int
	inflight    int
	maxInflight int
	aborts      []error // ctx.Err() seen by each AbortMultipartUpload
	createIn    *s3.CreateMultipartUploadInput
	completeIn  *s3.CompleteMultipartUploadInput
	putIn       *s3.PutObjectInput
}

type fakeUpload struct {
	key   string
	parts map[int32][]byte
	sums  map[int32]string
	size  map[int32]int64
	crc   map[int32]uint32
}

var errInjected = errors.New("injected failure")

func newFake() *fakeS3 {
	return &fakeS3{
		objects: map[string][]byte{},
		uploads: map[string]*fakeUpload{},
	}
}

func (f *fakeS3) record(op string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops = append(f.ops, op)
}

func (f *fakeS3) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, o := range f.ops {
		if o == op {
			n++
		}
	}
	return n
}

func readBody(r io.Reader, discard bool) ([]byte, uint32, int64, error) {
	if discard {
		// bytes.Reader.WriteTo hands the whole slice over: no copy, no alloc.
		h := crcWriter{}
		n, err := io.Copy(&h, r)
		return nil, h.crc, n, err
	}
	b, err := io.ReadAll(r)
	return b, crc32.Checksum(b, castagnoli), int64(len(b)), err
}

type crcWriter struct{ crc uint32 }

func (c *crcWriter) Write(p []byte) (int, error) {
	c.crc = crc32.Update(c.crc, castagnoli, p)
	return len(p), nil
}

func (f *fakeS3) PutObject(ctx context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	f.record("PutObject")
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, crc, n, err := readBody(in.Body, f.discard)
	if err != nil {
		return nil, err
	}
	if in.ContentLength == nil || *in.ContentLength != n {
		return nil, fmt.Errorf("PutObject: content length %v, body %d", in.ContentLength, n)
	}
	if in.ChecksumCRC32C != nil && *in.ChecksumCRC32C != crcBase64(crc) {
		return nil, fmt.Errorf("PutObject: BadDigest")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.putIn = in
	f.objects[*in.Key] = b
	return &s3.PutObjectOutput{ETag: aws.String(`"put"`)}, nil
}

func (f *fakeS3) CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, _ ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	f.record("CreateMultipartUpload")
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if f.failCreate {
		return nil, errInjected
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	id := fmt.Sprintf("upload-%d", f.nextID)
	f.uploads[id] = &fakeUpload{key: *in.Key, parts: map[int32][]byte{}, sums: map[int32]string{}, size: map[int32]int64{}, crc: map[int32]uint32{}}
	f.createIn = in
	return &s3.CreateMultipartUploadOutput{UploadId: aws.String(id)}, nil
}

func (f *fakeS3) UploadPart(ctx context.Context, in *s3.UploadPartInput, _ ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	f.record("UploadPart")
	f.mu.Lock()
	f.inflight++
	f.maxInflight = max(f.maxInflight, f.inflight)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inflight--
		f.mu.Unlock()
	}()
	num := aws.ToInt32(in.PartNumber)
	if f.arrived != nil {
		f.arrived <- num
	}
	if f.release != nil {
		select {
		case <-f.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if num == f.failPart {
		return nil, errInjected
	}
	b, crc, n, err := readBody(in.Body, f.discard)
	if err != nil {
		return nil, err
	}
	if in.ContentLength == nil || *in.ContentLength != n {
		return nil, fmt.Errorf("UploadPart: content length %v, body %d", in.ContentLength, n)
	}
	if in.ChecksumCRC32C != nil && *in.ChecksumCRC32C != crcBase64(crc) {
		return nil, fmt.Errorf("UploadPart %d: BadDigest", num)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.uploads[aws.ToString(in.UploadId)]
	if !ok {
		return nil, fmt.Errorf("UploadPart: NoSuchUpload")
	}
	u.parts[num] = b
	u.sums[num] = aws.ToString(in.ChecksumCRC32C)
	u.size[num] = n
	u.crc[num] = crc
	return &s3.UploadPartOutput{ETag: aws.String(fmt.Sprintf(`"etag-%d"`, num))}, nil
}

func (f *fakeS3) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, _ ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	f.record("CompleteMultipartUpload")
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if f.failComplete {
		return nil, errInjected
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.completeIn = in
	u, ok := f.uploads[aws.ToString(in.UploadId)]
	if !ok {
		return nil, fmt.Errorf("CompleteMultipartUpload: NoSuchUpload")
	}
	var obj bytes.Buffer
	var total int64
	var crcs []uint32
	parts := in.MultipartUpload.Parts
	for i, p := range parts {
		num := aws.ToInt32(p.PartNumber)
		if num != int32(i+1) {
			return nil, fmt.Errorf("CompleteMultipartUpload: InvalidPartOrder: part %d at %d", num, i)
		}
		if aws.ToString(p.ETag) != fmt.Sprintf(`"etag-%d"`, num) {
			return nil, fmt.Errorf("CompleteMultipartUpload: InvalidPart %d etag %v", num, aws.ToString(p.ETag))
		}
		if aws.ToString(p.ChecksumCRC32C) != u.sums[num] {
			return nil, fmt.Errorf("CompleteMultipartUpload: InvalidPart %d checksum", num)
		}
		if i < len(parts)-1 && u.size[num] < MinPartSize {
			return nil, fmt.Errorf("CompleteMultipartUpload: EntityTooSmall part %d", num)
		}
		obj.Write(u.parts[num])
		total += u.size[num]
		crcs = append(crcs, u.crc[num])
	}
	if len(parts) != len(u.parts) {
		return nil, fmt.Errorf("CompleteMultipartUpload: %d parts listed, %d uploaded", len(parts), len(u.parts))
	}
	if in.MpuObjectSize != nil && *in.MpuObjectSize != total {
		return nil, fmt.Errorf("CompleteMultipartUpload: size %d, parts %d", *in.MpuObjectSize, total)
	}
	if in.ChecksumCRC32C != nil && !f.discard {
		if *in.ChecksumCRC32C != crcBase64(crc32.Checksum(obj.Bytes(), castagnoli)) {
			return nil, fmt.Errorf("CompleteMultipartUpload: BadDigest (full object)")
		}
	}
	f.objects[u.key] = obj.Bytes()
	delete(f.uploads, aws.ToString(in.UploadId))
	return &s3.CompleteMultipartUploadOutput{ETag: aws.String(fmt.Sprintf(`"mpu-%d"`, len(parts)))}, nil
}

func (f *fakeS3) AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, _ ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	f.record("AbortMultipartUpload")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.aborts = append(f.aborts, ctx.Err())
	if _, ok := ctx.Deadline(); !ok {
		return nil, errors.New("abort without deadline")
	}
	if _, ok := f.uploads[aws.ToString(in.UploadId)]; !ok {
		return nil, &types.NoSuchUpload{}
	}
	delete(f.uploads, aws.ToString(in.UploadId))
	return &s3.AbortMultipartUploadOutput{}, nil
}

func (f *fakeS3) openUploads() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for id := range f.uploads {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
