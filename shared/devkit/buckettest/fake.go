package buckettest

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// Fake is an in-memory S3 with the semantics the suite checks: the errors S3
// returns (as the SDK's types), ListObjectsV2 pages of at most 1000 keys,
// DeleteObjects of at most 1000 keys, and multipart uploads verified as S3
// verifies them (per-part and full-object CRC32C, ETags, part order, the
// 5 MiB minimum part, the declared object size). It ignores the expected
// bucket owner, as moto does. It is safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	buckets map[string]*fakeBucket
	nextID  int
}

type fakeBucket struct {
	objects map[string]*fakeObject
	uploads map[string]*fakeUpload // upload id -> upload
}

type fakeObject struct {
	data            []byte
	contentType     *string
	contentEncoding *string
	metadata        map[string]string
	etag            string
	crc32c          *string // the checksum S3 keeps, if any
	checksumType    types.ChecksumType
}

type fakeUpload struct {
	key   string
	seq   int        // creation order: uploads of one key list oldest first
	proto fakeObject // content type, encoding, metadata
	alg   types.ChecksumAlgorithm
	typ   types.ChecksumType
	parts map[int32]*fakePart
}

type fakePart struct {
	data []byte
	crc  uint32
	sum  *string
	etag string
}

var _ Store = (*Fake)(nil)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// NewFake returns a Fake holding the given empty buckets.
func NewFake(buckets ...string) *Fake {
	f := &Fake{buckets: map[string]*fakeBucket{}}
	for _, b := range buckets {
		f.CreateBucket(b)
	}
	return f
}

// CreateBucket adds an empty bucket (it keeps an existing one).
func (f *Fake) CreateBucket(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.buckets[name] == nil {
		f.buckets[name] = &fakeBucket{objects: map[string]*fakeObject{}, uploads: map[string]*fakeUpload{}}
	}
}

func apiErr(code, format string, args ...any) error {
	return &smithy.GenericAPIError{Code: code, Message: fmt.Sprintf(format, args...)}
}

func crcBase64(v uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return base64.StdEncoding.EncodeToString(b[:])
}

func etagOf(b []byte) string {
	sum := md5.Sum(b)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

// bucket returns the named bucket; the caller holds f.mu.
func (f *Fake) bucket(name *string) (*fakeBucket, error) {
	b := f.buckets[aws.ToString(name)]
	if b == nil {
		return nil, &types.NoSuchBucket{Message: aws.String("The specified bucket does not exist: " + aws.ToString(name))}
	}
	return b, nil
}

// read reads a request body, checking its declared length and CRC32C.
func read(op string, body io.Reader, length *int64, sum *string) ([]byte, uint32, error) {
	var b []byte
	if body != nil {
		var err error
		if b, err = io.ReadAll(body); err != nil {
			return nil, 0, err
		}
	}
	if length != nil && *length != int64(len(b)) {
		return nil, 0, apiErr("IncompleteBody", "%s: content length %d, body %d bytes", op, *length, len(b))
	}
	crc := crc32.Checksum(b, castagnoli)
	if sum != nil && *sum != crcBase64(crc) {
		return nil, 0, apiErr("BadDigest", "%s: CRC32C %s sent, body has %s", op, *sum, crcBase64(crc))
	}
	return b, crc, nil
}

func (f *Fake) PutObject(ctx context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, _, err := read("PutObject", in.Body, in.ContentLength, in.ChecksumCRC32C)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.bucket(in.Bucket)
	if err != nil {
		return nil, err
	}
	if _, exists := b.objects[aws.ToString(in.Key)]; exists && aws.ToString(in.IfNoneMatch) == "*" {
		return nil, &smithy.GenericAPIError{Code: "PreconditionFailed", Message: "At least one of the pre-conditions you specified did not hold"}
	}
	o := &fakeObject{data: data, contentType: in.ContentType, contentEncoding: in.ContentEncoding,
		metadata: maps.Clone(in.Metadata), etag: etagOf(data), crc32c: in.ChecksumCRC32C}
	if o.crc32c != nil {
		o.checksumType = types.ChecksumTypeFullObject
	}
	b.objects[aws.ToString(in.Key)] = o
	return &s3.PutObjectOutput{ETag: aws.String(o.etag), ChecksumCRC32C: o.crc32c}, nil
}

// object returns the stored object; the caller holds f.mu.
func (f *Fake) object(bucket, key *string, missing error) (*fakeObject, error) {
	b, err := f.bucket(bucket)
	if err != nil {
		return nil, err
	}
	o := b.objects[aws.ToString(key)]
	if o == nil {
		return nil, missing
	}
	return o, nil
}

func (f *Fake) GetObject(ctx context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	o, err := f.object(in.Bucket, in.Key, &types.NoSuchKey{Message: aws.String("The specified key does not exist.")})
	if err != nil {
		return nil, err
	}
	h := o.head(in.ChecksumMode)
	data := o.data
	if n, ok := suffixRange(aws.ToString(in.Range)); ok {
		data = data[len(data)-min(n, len(data)):]
		h.ContentLength = aws.Int64(int64(len(data)))
	}
	return &s3.GetObjectOutput{
		Body: io.NopCloser(bytes.NewReader(slices.Clone(data))), ContentLength: h.ContentLength, ContentType: h.ContentType,
		ContentEncoding: h.ContentEncoding, Metadata: h.Metadata, ETag: h.ETag, ChecksumCRC32C: h.ChecksumCRC32C, ChecksumType: h.ChecksumType,
	}, nil
}

// suffixRange is n of a Range of the last n bytes, "bytes=-n" (the one
// form the fake serves; any other Range reads the whole object).
func suffixRange(r string) (int, bool) {
	var n int
	if _, err := fmt.Sscanf(r, "bytes=-%d", &n); err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

func (f *Fake) HeadObject(ctx context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	o, err := f.object(in.Bucket, in.Key, &types.NotFound{Message: aws.String("Not Found")})
	if err != nil {
		return nil, err
	}
	return o.head(in.ChecksumMode), nil
}

// head is what S3 says of the object, for HeadObject and GetObject: its
// checksum only when asked for.
func (o *fakeObject) head(mode types.ChecksumMode) *s3.HeadObjectOutput {
	out := &s3.HeadObjectOutput{
		ContentLength: aws.Int64(int64(len(o.data))), ContentType: o.contentType, ContentEncoding: o.contentEncoding,
		Metadata: maps.Clone(o.metadata), ETag: aws.String(o.etag),
	}
	if mode == types.ChecksumModeEnabled {
		out.ChecksumCRC32C, out.ChecksumType = o.crc32c, o.checksumType
	}
	return out
}

func (f *Fake) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, _ ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.bucket(in.Bucket)
	if err != nil {
		return nil, err
	}
	delete(b.objects, aws.ToString(in.Key))
	return &s3.DeleteObjectOutput{}, nil
}

func (f *Fake) DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, _ ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if in.Delete == nil || len(in.Delete.Objects) == 0 || len(in.Delete.Objects) > 1000 {
		return nil, apiErr("MalformedXML", "DeleteObjects takes 1 to 1000 keys")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.bucket(in.Bucket)
	if err != nil {
		return nil, err
	}
	out := &s3.DeleteObjectsOutput{}
	for _, id := range in.Delete.Objects {
		delete(b.objects, aws.ToString(id.Key))
		if !aws.ToBool(in.Delete.Quiet) {
			out.Deleted = append(out.Deleted, types.DeletedObject{Key: id.Key})
		}
	}
	return out, nil
}

func (f *Fake) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.bucket(in.Bucket)
	if err != nil {
		return nil, err
	}
	limit := int(aws.ToInt32(in.MaxKeys))
	if in.MaxKeys == nil || limit > 1000 {
		limit = 1000
	}
	after := max(aws.ToString(in.StartAfter), aws.ToString(in.ContinuationToken))
	prefix, delim := aws.ToString(in.Prefix), aws.ToString(in.Delimiter)
	// Entries are keys, and with a delimiter the folders (common prefixes)
	// that stand for every key below them, each listed once, in order.
	var entries []string
	folders := map[string]bool{}
	for k := range b.objects {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if i := strings.Index(k[len(prefix):], delim); delim != "" && i >= 0 {
			k = k[:len(prefix)+i+len(delim)]
			if folders[k] {
				continue
			}
			folders[k] = true
		}
		if k > after {
			entries = append(entries, k)
		}
	}
	slices.Sort(entries)
	out := &s3.ListObjectsV2Output{Name: in.Bucket, Prefix: in.Prefix, MaxKeys: aws.Int32(int32(limit)), ContinuationToken: in.ContinuationToken}
	if len(entries) > limit {
		entries = entries[:limit]
		out.IsTruncated = aws.Bool(true)
		out.NextContinuationToken = aws.String(entries[limit-1])
	} else {
		out.IsTruncated = aws.Bool(false)
	}
	for _, k := range entries {
		if folders[k] {
			out.CommonPrefixes = append(out.CommonPrefixes, types.CommonPrefix{Prefix: aws.String(k)})
			continue
		}
		o := b.objects[k]
		out.Contents = append(out.Contents, types.Object{Key: aws.String(k), Size: aws.Int64(int64(len(o.data))), ETag: aws.String(o.etag)})
	}
	out.KeyCount = aws.Int32(int32(len(entries)))
	return out, nil
}

func (f *Fake) CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, _ ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.bucket(in.Bucket)
	if err != nil {
		return nil, err
	}
	if in.ChecksumType == types.ChecksumTypeFullObject && in.ChecksumAlgorithm == "" {
		return nil, apiErr("InvalidRequest", "checksum type without an algorithm")
	}
	f.nextID++
	id := fmt.Sprintf("fake-upload-%d", f.nextID)
	b.uploads[id] = &fakeUpload{
		key:   aws.ToString(in.Key),
		seq:   f.nextID,
		proto: fakeObject{contentType: in.ContentType, contentEncoding: in.ContentEncoding, metadata: maps.Clone(in.Metadata)},
		alg:   in.ChecksumAlgorithm, typ: in.ChecksumType, parts: map[int32]*fakePart{},
	}
	return &s3.CreateMultipartUploadOutput{Bucket: in.Bucket, Key: in.Key, UploadId: aws.String(id)}, nil
}

// upload returns an upload in progress; the caller holds f.mu.
func (f *Fake) upload(bucket, key, id *string) (*fakeBucket, *fakeUpload, error) {
	b, err := f.bucket(bucket)
	if err != nil {
		return nil, nil, err
	}
	u := b.uploads[aws.ToString(id)]
	if u == nil || u.key != aws.ToString(key) {
		return nil, nil, &types.NoSuchUpload{Message: aws.String("The specified upload does not exist.")}
	}
	return b, u, nil
}

func (f *Fake) UploadPart(ctx context.Context, in *s3.UploadPartInput, _ ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	num := aws.ToInt32(in.PartNumber)
	if num < 1 || num > 10000 {
		return nil, apiErr("InvalidArgument", "part number %d", num)
	}
	data, crc, err := read(fmt.Sprintf("UploadPart %d", num), in.Body, in.ContentLength, in.ChecksumCRC32C)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, u, err := f.upload(in.Bucket, in.Key, in.UploadId)
	if err != nil {
		return nil, err
	}
	if u.alg == types.ChecksumAlgorithmCrc32c && in.ChecksumCRC32C == nil {
		return nil, apiErr("InvalidRequest", "UploadPart %d: the upload was created with CRC32C; the part carries none", num)
	}
	p := &fakePart{data: data, crc: crc, sum: in.ChecksumCRC32C, etag: etagOf(data)}
	u.parts[num] = p
	return &s3.UploadPartOutput{ETag: aws.String(p.etag), ChecksumCRC32C: p.sum}, nil
}

func (f *Fake) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, _ ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, u, err := f.upload(in.Bucket, in.Key, in.UploadId)
	if err != nil {
		return nil, err
	}
	if in.MultipartUpload == nil || len(in.MultipartUpload.Parts) == 0 {
		return nil, apiErr("MalformedXML", "no parts")
	}
	listed := in.MultipartUpload.Parts
	var obj bytes.Buffer
	var md5s, crcs []byte
	prev := int32(0)
	for i, lp := range listed {
		num := aws.ToInt32(lp.PartNumber)
		if num <= prev {
			return nil, apiErr("InvalidPartOrder", "part %d after part %d", num, prev)
		}
		prev = num
		p := u.parts[num]
		if p == nil || aws.ToString(lp.ETag) != p.etag {
			return nil, apiErr("InvalidPart", "part %d (ETag %s) was not uploaded", num, aws.ToString(lp.ETag))
		}
		if aws.ToString(lp.ChecksumCRC32C) != aws.ToString(p.sum) {
			return nil, apiErr("InvalidPart", "part %d: checksum %s listed, %s uploaded", num, aws.ToString(lp.ChecksumCRC32C), aws.ToString(p.sum))
		}
		if i < len(listed)-1 && len(p.data) < 5<<20 {
			return nil, apiErr("EntityTooSmall", "part %d is %d bytes", num, len(p.data))
		}
		obj.Write(p.data)
		sum := md5.Sum(p.data)
		md5s = append(md5s, sum[:]...)
		crcs = binary.BigEndian.AppendUint32(crcs, p.crc)
	}
	data := obj.Bytes()
	if in.MpuObjectSize != nil && *in.MpuObjectSize != int64(len(data)) {
		return nil, apiErr("InvalidRequest", "object size %d declared, parts hold %d", *in.MpuObjectSize, len(data))
	}
	o := u.proto
	o.data = data
	sum := md5.Sum(md5s)
	o.etag = fmt.Sprintf(`"%s-%d"`, hex.EncodeToString(sum[:]), len(listed))
	full := crcBase64(crc32.Checksum(data, castagnoli))
	switch {
	case u.typ == types.ChecksumTypeFullObject:
		if in.ChecksumCRC32C != nil && *in.ChecksumCRC32C != full {
			return nil, apiErr("BadDigest", "full-object CRC32C %s sent, object has %s", *in.ChecksumCRC32C, full)
		}
		o.crc32c, o.checksumType = aws.String(full), types.ChecksumTypeFullObject
	case u.alg == types.ChecksumAlgorithmCrc32c:
		o.crc32c = aws.String(fmt.Sprintf("%s-%d", crcBase64(crc32.Checksum(crcs, castagnoli)), len(listed)))
		o.checksumType = types.ChecksumTypeComposite
	}
	b.objects[u.key] = &o
	delete(b.uploads, aws.ToString(in.UploadId))
	return &s3.CompleteMultipartUploadOutput{Bucket: in.Bucket, Key: in.Key, ETag: aws.String(o.etag), ChecksumCRC32C: o.crc32c}, nil
}

func (f *Fake) AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, _ ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, _, err := f.upload(in.Bucket, in.Key, in.UploadId)
	if err != nil {
		return nil, err
	}
	delete(b.uploads, aws.ToString(in.UploadId))
	return &s3.AbortMultipartUploadOutput{}, nil
}

func (f *Fake) ListMultipartUploads(ctx context.Context, in *s3.ListMultipartUploadsInput, _ ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.bucket(in.Bucket)
	if err != nil {
		return nil, err
	}
	limit := int(aws.ToInt32(in.MaxUploads))
	if in.MaxUploads == nil || limit > 1000 || limit < 1 {
		limit = 1000
	}
	// S3's order: by key, then oldest first; a page starts after the
	// (key, upload id) marker, or after every upload of the key marker.
	type entry struct {
		id string
		u  *fakeUpload
	}
	var all []entry
	for id, u := range b.uploads {
		if strings.HasPrefix(u.key, aws.ToString(in.Prefix)) {
			all = append(all, entry{id, u})
		}
	}
	slices.SortFunc(all, func(x, y entry) int {
		if c := strings.Compare(x.u.key, y.u.key); c != 0 {
			return c
		}
		return x.u.seq - y.u.seq
	})
	keyMarker, idMarker := aws.ToString(in.KeyMarker), aws.ToString(in.UploadIdMarker)
	markerSeq := 0
	if m := b.uploads[idMarker]; m != nil {
		markerSeq = m.seq
	}
	out := &s3.ListMultipartUploadsOutput{Bucket: in.Bucket, Prefix: in.Prefix, KeyMarker: in.KeyMarker, UploadIdMarker: in.UploadIdMarker,
		MaxUploads: aws.Int32(int32(limit)), IsTruncated: aws.Bool(false)}
	for _, e := range all {
		if keyMarker != "" && (e.u.key < keyMarker || e.u.key == keyMarker && (idMarker == "" || e.u.seq <= markerSeq)) {
			continue
		}
		if len(out.Uploads) == limit {
			out.IsTruncated = aws.Bool(true)
			last := out.Uploads[limit-1]
			out.NextKeyMarker, out.NextUploadIdMarker = last.Key, last.UploadId
			break
		}
		out.Uploads = append(out.Uploads, types.MultipartUpload{Key: aws.String(e.u.key), UploadId: aws.String(e.id)})
	}
	return out, nil
}

func (f *Fake) ListParts(ctx context.Context, in *s3.ListPartsInput, _ ...func(*s3.Options)) (*s3.ListPartsOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, u, err := f.upload(in.Bucket, in.Key, in.UploadId)
	if err != nil {
		return nil, err
	}
	out := &s3.ListPartsOutput{Bucket: in.Bucket, Key: in.Key, UploadId: in.UploadId}
	for _, num := range slices.Sorted(maps.Keys(u.parts)) {
		p := u.parts[num]
		out.Parts = append(out.Parts, types.Part{PartNumber: aws.Int32(num), Size: aws.Int64(int64(len(p.data))), ETag: aws.String(p.etag), ChecksumCRC32C: p.sum})
	}
	return out, nil
}
