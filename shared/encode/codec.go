package encode

import (
	"github.com/golang/snappy"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/zstd"
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
// The compact profile is for smaller files and spends more CPU on them:
// parquet-go's codecs, S2's "better" Snappy and zstd's default level (about
// level 3).
var (
	snappyReference compress.Codec = referenceSnappy{}
	zstdFastest     compress.Codec = &zstd.Codec{Level: zstd.SpeedFastest}
	profileCodecs                  = [...]map[fileformat.Codec]compress.Codec{
		ProfileCompatible: {fileformat.Snappy: snappyReference, fileformat.Zstd: zstdFastest},
		ProfileCompact:    {fileformat.Snappy: &parquet.Snappy, fileformat.Zstd: &parquet.Zstd},
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
