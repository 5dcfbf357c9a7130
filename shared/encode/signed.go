package encode

import (
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// Decimals wider than 18 digits are stored as fixed-length big-endian two's
// complement numbers, whose order is the numbers' order: -1 (0xFF...) sorts
// before 1 (0x00...01). parquet-go orders fixed-length values as unsigned
// bytes, so on its own it writes a minimum and maximum that are wrong for any
// row group holding both signs (the minimum 1, the maximum -1), and an
// engine that skips row groups or pages by their statistics could skip rows a
// query must return. signedNode gives such a column a type
// that orders values as signed numbers everywhere statistics are made: the
// bounds of each page (page headers, column index, column chunk) and the
// merging of page bounds into the chunk's.
type signedNode struct{ parquet.Node }

func (n signedNode) Type() parquet.Type { return signedType{n.Node.Type()} }

type signedType struct{ parquet.Type }

func (t signedType) Compare(a, b parquet.Value) int {
	return compareSigned(a.ByteArray(), b.ByteArray())
}

func (t signedType) NewColumnBuffer(columnIndex, numValues int) parquet.ColumnBuffer {
	return signedBuffer{t.Type.NewColumnBuffer(columnIndex, numValues), t}
}

func (t signedType) NewColumnIndexer(sizeLimit int) parquet.ColumnIndexer {
	return unorderedIndexer{t.Type.NewColumnIndexer(sizeLimit)}
}

type signedBuffer struct {
	parquet.ColumnBuffer
	typ signedType
}

func (b signedBuffer) Type() parquet.Type { return b.typ }
func (b signedBuffer) Page() parquet.Page { return signedPage{b.ColumnBuffer.Page(), b.typ} }
func (b signedBuffer) Clone() parquet.ColumnBuffer {
	return signedBuffer{b.ColumnBuffer.Clone(), b.typ}
}

type signedPage struct {
	parquet.Page
	typ signedType
}

func (p signedPage) Type() parquet.Type { return p.typ }

func (p signedPage) Slice(i, j int64) parquet.Page { return signedPage{p.Page.Slice(i, j), p.typ} }

// Bounds returns the page's smallest and largest numbers.
func (p signedPage) Bounds() (min, max parquet.Value, ok bool) {
	values := p.Page.Data()
	data, size := values.FixedLenByteArray()
	if size == 0 || len(data) < size {
		return min, max, false
	}
	lo, hi := data[:size], data[:size]
	for i := size; i+size <= len(data); i += size {
		v := data[i : i+size]
		if compareSigned(v, lo) < 0 {
			lo = v
		}
		if compareSigned(v, hi) > 0 {
			hi = v
		}
	}
	col := p.Page.Column()
	return parquet.FixedLenByteArrayValue(lo).Level(0, 0, col), parquet.FixedLenByteArrayValue(hi).Level(0, 0, col), true
}

// unorderedIndexer declares the pages' bounds unordered: parquet-go would
// compute their order as unsigned bytes.
type unorderedIndexer struct{ parquet.ColumnIndexer }

func (x unorderedIndexer) ColumnIndex() format.ColumnIndex {
	ci := x.ColumnIndexer.ColumnIndex()
	ci.BoundaryOrder = format.Unordered
	return ci
}

// compareSigned compares two big-endian two's complement numbers of the same
// length.
func compareSigned(a, b []byte) int {
	if len(a) == 0 || len(b) == 0 {
		return len(a) - len(b)
	}
	if na, nb := a[0]&0x80 != 0, b[0]&0x80 != 0; na != nb {
		if na {
			return -1
		}
		return 1
	}
	// Same sign: two's complement orders like unsigned bytes.
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return len(a) - len(b)
}
