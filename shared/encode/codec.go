package encode

import (
	"runtime"
	"sync"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"

	"github.com/daybook-dev/daybook/shared/fileformat"
)

// Page codecs. The codec is what a file's footer names (SNAPPY, ZSTD);
// which encoder writes it, and how hard it works, is this package's choice,
// since any reader decodes any valid stream of its codec.
//
// The compatible profile aims at DuckDB's single-thread encode speed within
// 5% of its file size (the targets in bench/parquetcompare): Snappy with
// the reference algorithm (github.com/golang/snappy, the Go port of the C++
// library DuckDB and Arrow use), and zstd at klauspost/compress's fastest
// level (about zstd level 1). parquet-go's own Snappy codec is S2's
// "better" encoder, about 20% slower here for the same size, and S2's fast
// encoder is as fast but hashes 6 bytes, so it misses the 4- and 5-byte
// repeats of sorted timestamps and writes files 6% larger than DuckDB's.
// The compact profile is for smaller files and spends more CPU on them: S2's
// "better" Snappy (parquet-go's) and zstd's default level (about level 3).
var (
	snappyReference compress.Codec = referenceSnappy{}
	zstdFastest     compress.Codec = &zstdCodec{level: zstd.SpeedFastest}
	zstdDefault     compress.Codec = &zstdCodec{level: zstd.SpeedDefault}
	profileCodecs                  = [...]map[fileformat.Codec]compress.Codec{
		ProfileCompatible: {fileformat.Snappy: snappyReference, fileformat.Zstd: zstdFastest},
		ProfileCompact:    {fileformat.Snappy: &parquet.Snappy, fileformat.Zstd: zstdDefault},
	}
)

// pageCodec returns the codec a profile compresses pages with, nil for a
// codec the format does not have.
func pageCodec(p Profile, c fileformat.Codec) compress.Codec {
	if !p.valid() {
		return nil
	}
	return profileCodecs[p][fileformat.Parquet.Codec(c)]
}

// referenceSnappy writes Snappy blocks with github.com/golang/snappy.
type referenceSnappy struct{}

func (referenceSnappy) String() string                            { return "SNAPPY" }
func (referenceSnappy) CompressionCodec() format.CompressionCodec { return format.Snappy }

// Encode compresses src into dst, reallocating it if it is too small.
// golang/snappy sizes by length, parquet-go hands dst[:0]: its capacity is
// what is free.
func (referenceSnappy) Encode(dst, src []byte) ([]byte, error) {
	return snappy.Encode(dst[:cap(dst)], src), nil
}

// Decode decompresses src into dst, reallocating it if it is too small.
func (referenceSnappy) Decode(dst, src []byte) ([]byte, error) {
	return snappy.Decode(dst[:cap(dst)], src)
}

// zstdWindow bounds how far back a zstd match reaches. A page is one zstd
// frame and pages hold about PageBufferSize (256 KiB) of values, a
// dictionary page up to DictionaryLimit and a quarter: a longer window finds
// nothing more in them.
const zstdWindow = 1 << 20

// zstdCodec compresses pages with one klauspost/compress zstd Encoder per
// level for the whole process, which holds an encoder per core and hands
// them to EncodeAll calls in turn. parquet-go's own zstd codec keeps its
// encoders in a sync.Pool, which every GC empties, and sizes each one's
// history for the library's 8 MiB window: 16 MiB allocated again after
// every GC. Here the window is zstdWindow and the encoders stay: about a
// MiB of history each, allocated once.
type zstdCodec struct {
	level zstd.EncoderLevel
	once  sync.Once
	enc   *zstd.Encoder
	err   error
}

func (c *zstdCodec) String() string                            { return "ZSTD" }
func (c *zstdCodec) CompressionCodec() format.CompressionCodec { return format.Zstd }

// Encode compresses src into dst (one zstd frame), reallocating it if it is
// too small.
func (c *zstdCodec) Encode(dst, src []byte) ([]byte, error) {
	c.once.Do(func() {
		c.enc, c.err = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(c.level),
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
			zstd.WithWindowSize(zstdWindow),
			zstd.WithLowerEncoderMem(true),
			zstd.WithZeroFrames(true), // an empty page is still a frame
			zstd.WithEncoderCRC(false),
		)
	})
	if c.err != nil {
		return dst[:0], c.err
	}
	return c.enc.EncodeAll(src, dst[:0]), nil
}

// Decode decompresses src with parquet-go's codec.
func (c *zstdCodec) Decode(dst, src []byte) ([]byte, error) { return parquet.Zstd.Decode(dst, src) }
