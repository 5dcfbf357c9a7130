package encode

import (
	"bytes"
	"math/rand/v2"
	"testing"

	gsnappy "github.com/golang/snappy"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"

	"github.com/daybook-dev/daybook/shared/fileformat"
)

// TestPageCodec: each profile's codec is named in the footer as the codec
// asked for, and the reference Snappy encoder writes blocks another Snappy
// decoder reads back (klauspost/compress's, the one parquet-go reads with),
// into a buffer too small or large enough alike, without reallocating one
// large enough.
func TestPageCodec(t *testing.T) {
	for _, c := range []struct {
		profile Profile
		codec   fileformat.Codec
		want    format.CompressionCodec
	}{
		{ProfileCompatible, "", format.Snappy}, // the format's default
		{ProfileCompatible, fileformat.Snappy, format.Snappy},
		{ProfileCompatible, fileformat.Zstd, format.Zstd},
		{ProfileCompact, fileformat.Snappy, format.Snappy},
		{ProfileCompact, fileformat.Zstd, format.Zstd},
	} {
		got := pageCodec(c.profile, c.codec)
		if got == nil || got.CompressionCodec() != c.want {
			t.Errorf("%s/%q: codec %v, want %v", c.profile, c.codec, got, c.want)
		}
	}
	if got := pageCodec(ProfileCompatible, "gzip"); got != nil {
		t.Errorf("gzip: codec %v, want none", got)
	}
	if got := pageCodec(Profile(9), fileformat.Snappy); got != nil {
		t.Errorf("unknown profile: codec %v, want none", got)
	}

	r := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 100_000)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	for _, src := range [][]byte{
		nil,
		[]byte("short"),
		bytes.Repeat([]byte("page_view,click,"), 20_000),
		random,
	} {
		for _, dst := range [][]byte{nil, make([]byte, 0, 16), make([]byte, 0, 1<<20)} {
			enc, err := snappyReference.Encode(dst, src)
			if err != nil {
				t.Fatal(err)
			}
			if reused := cap(dst) > 0 && &enc[:1][0] == &dst[:1][0]; reused != (cap(dst) >= gsnappy.MaxEncodedLen(len(src))) {
				t.Errorf("%d bytes into cap %d: buffer reused %v", len(src), cap(dst), reused)
			}
			back, err := snappy.Decode(nil, enc)
			if err != nil || !bytes.Equal(back, src) {
				t.Fatalf("%d bytes into cap %d: decoded %d bytes, %v", len(src), cap(dst), len(back), err)
			}
			dec, err := snappyReference.Decode(nil, enc)
			if err != nil || !bytes.Equal(dec, src) {
				t.Fatalf("%d bytes: own decode %d bytes, %v", len(src), len(dec), err)
			}
		}
	}
}

// TestZstdCodec: both levels write frames a stock zstd decoder reads back,
// an empty page included, and a page longer than the window.
func TestZstdCodec(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	long := make([]byte, 3*zstdWindow)
	for i := range long {
		long[i] = "page_view,click,search"[r.IntN(22)]
	}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	for _, codec := range []compress.Codec{zstdFastest, zstdDefault} {
		for _, src := range [][]byte{nil, []byte("short"), bytes.Repeat([]byte("session_1234,"), 10_000), long} {
			enc, err := codec.Encode(make([]byte, 0, 64), src)
			if err != nil {
				t.Fatal(err)
			}
			if len(enc) == 0 {
				t.Fatalf("%d bytes: no frame", len(src))
			}
			back, err := dec.DecodeAll(enc, nil)
			if err != nil || !bytes.Equal(back, src) {
				t.Fatalf("%d bytes: decoded %d bytes, %v", len(src), len(back), err)
			}
			own, err := codec.Decode(nil, enc)
			if err != nil || !bytes.Equal(own, src) {
				t.Fatalf("%d bytes: own decode %d bytes, %v", len(src), len(own), err)
			}
		}
	}
}
