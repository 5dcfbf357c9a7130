package icetable

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

// What a table's content is refused with. Each wraps ErrBroken: the table
// cannot be used as it is in the bucket (see BrokenError), which no retry
// changes; `daybook table repair` rebuilds it.
var (
	// ErrBroken: the table's metadata in the bucket cannot be used.
	ErrBroken = errors.New("icetable: the table's metadata cannot be used")
	// ErrOutsideTable: the metadata names a path outside the table: a
	// location other than the table's, a metadata-log entry or manifest
	// list outside its metadata/ folder, a file of another bucket.
	ErrOutsideTable = errors.New("icetable: a path outside the table")
	// ErrTableLimit: reading the table would pass one of its Limits.
	ErrTableLimit = errors.New("icetable: the table's metadata is larger than daybook reads")
	// ErrAvroTooLarge: a manifest or manifest list decompresses to more
	// than Limits.AvroDecodedBytes (a decompression bomb, or a file no
	// daybook table holds).
	ErrAvroTooLarge = errors.New("icetable: an Avro file decompresses past its limit")
)

// Limits bound what one commit reads of a table, whatever its metadata
// says: each object's size, how many manifest lists and manifests it reads,
// and how much it reads and decompresses in all. A daybook table stays far
// below them (docs/performance.md: a metadata file of 87 KB after 8,000
// commits, a commit reading one or two manifest lists and at most ~17
// manifests); a table past one is broken (ErrTableLimit, ErrAvroTooLarge).
type Limits struct {
	// MetadataBytes bounds a vN.metadata.json file.
	MetadataBytes int64
	// Snapshots bounds the snapshots one metadata file may hold.
	Snapshots int
	// ObjectBytes bounds a manifest list or manifest as stored.
	ObjectBytes int64
	// AvroDecodedBytes bounds what one manifest list or manifest
	// decompresses to, all its blocks together.
	AvroDecodedBytes int64
	// ManifestLists and Manifests bound how many of each one commit reads.
	ManifestLists, Manifests int
	// CommitReadBytes bounds the bytes of metadata files, manifest lists and
	// manifests one commit reads, and, separately, what their Avro blocks
	// decompress to.
	CommitReadBytes int64
	// MetadataListed bounds the v* objects of the table's metadata/ folder
	// a load lists when the version hint cannot be used.
	MetadataListed int
}

// DefaultLimits are the limits of a zero Limits' fields.
var DefaultLimits = Limits{
	MetadataBytes:    8 << 20,
	Snapshots:        1000,
	ObjectBytes:      64 << 20,
	AvroDecodedBytes: 128 << 20,
	ManifestLists:    64,
	Manifests:        512,
	CommitReadBytes:  512 << 20,
	// A table keeps 21 metadata files (the log's 20 and the current one)
	// and the hint under metadata/v (its manifests are named otherwise);
	// 5,000 leaves room for thousands more whose cleanup delete failed,
	// and costs at most six listing requests (S3 and GCS list 1,000 keys
	// a page, Azure 5,000) and a few hundred KB held, whatever is planted.
	MetadataListed: 5000,
}

// MaxDataFileReadBytes bounds a data file read whole through the table (a
// scan's, in the checks and the demo).
const MaxDataFileReadBytes = 64 << 20

func (l Limits) orDefault() Limits {
	d := DefaultLimits
	pick := func(v, def int64) int64 {
		if v > 0 {
			return v
		}
		return def
	}
	return Limits{
		MetadataBytes:    pick(l.MetadataBytes, d.MetadataBytes),
		Snapshots:        int(pick(int64(l.Snapshots), int64(d.Snapshots))),
		ObjectBytes:      pick(l.ObjectBytes, d.ObjectBytes),
		AvroDecodedBytes: pick(l.AvroDecodedBytes, d.AvroDecodedBytes),
		ManifestLists:    int(pick(int64(l.ManifestLists), int64(d.ManifestLists))),
		Manifests:        int(pick(int64(l.Manifests), int64(d.Manifests))),
		CommitReadBytes:  pick(l.CommitReadBytes, d.CommitReadBytes),
		MetadataListed:   int(pick(int64(l.MetadataListed), int64(d.MetadataListed))),
	}
}

// BrokenError is a table that cannot be used as it is in the bucket: Key
// is the object at fault (the newest metadata file, or the manifest or
// list the metadata leads to).
type BrokenError struct {
	Key string
	Err error
}

func (e *BrokenError) Error() string { return fmt.Sprintf("table object %s: %v", e.Key, e.Err) }

func (e *BrokenError) Unwrap() []error { return []error{ErrBroken, e.Err} }

// broken wraps err as the table's object key at fault, unless it already
// names one.
func broken(key string, err error) error {
	if be := (*BrokenError)(nil); errors.As(err, &be) {
		return err
	}
	return &BrokenError{Key: key, Err: err}
}

// avroMagic starts every Avro object container file.
var avroMagic = []byte{'O', 'b', 'j', 1}

// checkAvro walks the Avro object container file body (key) block by
// block and counts what each block decompresses to, without holding it:
// past Limits.AvroDecodedBytes for the file, or the commit's total, it is
// ErrAvroTooLarge naming the file and the limit, refused before the
// library decodes it. (The library bounds each block, not the file: a
// small file of many bomb blocks decompresses without end.) Malformed
// framing is left to the library's own decoder, which refuses it.
func (s *scope) checkAvro(key string, body []byte) error {
	r := bytes.NewReader(body)
	magic := make([]byte, 4)
	if _, err := io.ReadFull(r, magic); err != nil || !bytes.Equal(magic, avroMagic) {
		return nil
	}
	codec := "null"
	for { // the header's metadata map: blocks of key/value pairs
		n, err := binary.ReadVarint(r)
		if err != nil || n == 0 {
			break
		}
		if n < 0 {
			n = -n
			if _, err := binary.ReadVarint(r); err != nil { // the block's size in bytes
				return nil
			}
		}
		for range n {
			k, err1 := readAvroBytes(r)
			v, err2 := readAvroBytes(r)
			if err1 != nil || err2 != nil {
				return nil
			}
			if string(k) == "avro.codec" {
				codec = string(v)
			}
		}
	}
	if _, err := r.Seek(16, io.SeekCurrent); err != nil { // the sync marker
		return nil
	}
	limit := s.limits.AvroDecodedBytes
	var total int64
	for r.Len() > 0 {
		if _, err := binary.ReadVarint(r); err != nil { // records in the block
			return nil
		}
		size, err := binary.ReadVarint(r)
		if err != nil || size < 0 || size > int64(r.Len()) {
			return nil
		}
		block := body[len(body)-r.Len() : len(body)-r.Len()+int(size)]
		if _, err := r.Seek(size+16, io.SeekCurrent); err != nil {
			return nil
		}
		n, err := decodedSize(codec, block, limit-total+1)
		if err != nil {
			break // a block that does not decompress: the library refuses it
		}
		if total += n; total > limit {
			return fmt.Errorf("%w: %s decompresses to more than %d bytes (codec %s)", ErrAvroTooLarge, s.uri(key), limit, codec)
		}
	}
	return s.decoded(key, total)
}

// readAvroBytes reads an Avro bytes or string value.
func readAvroBytes(r *bytes.Reader) ([]byte, error) {
	n, err := binary.ReadVarint(r)
	if err != nil || n < 0 || n > int64(r.Len()) {
		return nil, io.ErrUnexpectedEOF
	}
	b := make([]byte, n)
	_, err = io.ReadFull(r, b)
	return b, err
}

// decodedSize is what block decompresses to under codec, counted up to
// max bytes (a larger block reads as max), never held.
func decodedSize(codec string, block []byte, max int64) (int64, error) {
	switch codec {
	case "null", "":
		return int64(len(block)), nil
	case "deflate":
		return io.Copy(io.Discard, io.LimitReader(flate.NewReader(bytes.NewReader(block)), max))
	case "snappy": // a snappy block, then the CRC-32 of the decompressed data
		if len(block) < 4 {
			return 0, errors.New("a snappy block without its checksum")
		}
		n, err := snappy.DecodedLen(block[:len(block)-4])
		return int64(n), err
	case "zstandard":
		d, err := zstd.NewReader(bytes.NewReader(block), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(max)))
		if err != nil {
			return 0, err
		}
		defer d.Close()
		n, err := io.Copy(io.Discard, io.LimitReader(d, max))
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
			return max, nil
		}
		return n, err
	}
	return 0, fmt.Errorf("unknown Avro codec %q", codec)
}
