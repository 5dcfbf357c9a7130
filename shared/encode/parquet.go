package encode

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// Schema builds the Parquet schema of ds: columns in declared order, exact
// logical types (SPEC F5), required columns REQUIRED and nullable ones
// OPTIONAL. opts.Profile only chooses encodings, never types.
func Schema(ds dataset.Dataset, opts Options) (*parquet.Schema, error) {
	if !opts.Profile.valid() {
		return nil, fmt.Errorf("parquet schema of dataset %s: %w", ds.Name, errProfile(opts.Profile))
	}
	fields := make([]parquet.Field, len(ds.Columns))
	for i, c := range ds.Columns {
		node, err := columnNode(c, opts.Profile)
		if err != nil {
			return nil, fmt.Errorf("parquet schema of dataset %s: column %s: %w", ds.Name, c.Name, err)
		}
		fields[i] = &orderedField{Node: node, name: c.Name}
	}
	return parquet.NewSchema(ds.Name, &orderedGroup{fields: fields}), nil
}

func errProfile(p Profile) error { return fmt.Errorf("parquet profile %s: %w", p, ErrUnsupported) }

// columnNode returns the column's type with its encoding set explicitly, so
// no library default (parquet-go would pick DELTA_LENGTH_BYTE_ARRAY for
// strings) decides what a reader must decode.
func columnNode(c dataset.Column, profile Profile) (parquet.Node, error) {
	var node parquet.Node
	var enc encoding.Encoding // nil: PLAIN, or DELTA_BINARY_PACKED in the compact profile
	switch c.Type.Kind {
	case dataset.KindDate:
		node = parquet.Date()
	case dataset.KindTimestamp:
		node = parquet.TimestampAdjusted(parquet.Microsecond, true)
	case dataset.KindInt64:
		node = parquet.Leaf(parquet.Int64Type)
	case dataset.KindDouble:
		node = parquet.Leaf(parquet.DoubleType)
	case dataset.KindDecimal:
		p, s := c.Type.Precision, c.Type.Scale
		switch {
		case p <= 9:
			node = parquet.Decimal(s, p, parquet.Int32Type)
		case p <= 18:
			node = parquet.Decimal(s, p, parquet.Int64Type)
		default:
			node = signedNode{parquet.Decimal(s, p, parquet.FixedLenByteArrayType(decimalBytes(p)))}
		}
	case dataset.KindBoolean:
		node = parquet.Leaf(parquet.BooleanType)
	case dataset.KindString, dataset.KindJSON:
		// Every string and JSON column, declared low-cardinality or not: a
		// dictionary is what makes repeated ids and attribute objects small,
		// and the dictionary limit bounds what a unique column costs.
		node = parquet.String()
		if c.Type.Kind == dataset.KindJSON {
			node = parquet.JSON()
		}
		enc = &parquet.RLEDictionary
	default:
		return nil, fmt.Errorf("type %s: %w", c.Type, ErrUnsupported)
	}
	if enc == nil {
		enc = &parquet.Plain
		if k := node.Type().Kind(); profile == ProfileCompact && (k == parquet.Int32 || k == parquet.Int64) {
			// Dates, timestamps, integers and decimals up to 18 digits.
			// Timestamps of a day sorted by time differ by small deltas, and
			// small numbers leave the high bytes empty: DELTA_BINARY_PACKED
			// bit-packs what is left before compression even runs.
			enc = &parquet.DeltaBinaryPacked
		}
	}
	node = parquet.Encoded(node, enc)
	if c.Nullable {
		return parquet.Optional(node), nil
	}
	return parquet.Required(node), nil
}

// decimalBytes is the fixed length that holds any unscaled value of
// precision p in two's complement (the Parquet spec's minimum).
func decimalBytes(p int) int {
	max := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil)
	return (max.BitLen() + 1 + 7) / 8 // +1 for the sign bit
}

// orderedGroup is a Parquet group that keeps its fields in declared order.
// parquet.Group is a map and sorts fields by name, which would break the
// declared column order (SPEC D1/D2).
type orderedGroup struct{ fields []parquet.Field }

func (g *orderedGroup) ID() int                           { return 0 }
func (g *orderedGroup) Type() parquet.Type                { return parquet.Group{}.Type() }
func (g *orderedGroup) Optional() bool                    { return false }
func (g *orderedGroup) Repeated() bool                    { return false }
func (g *orderedGroup) Required() bool                    { return true }
func (g *orderedGroup) Leaf() bool                        { return false }
func (g *orderedGroup) Fields() []parquet.Field           { return g.fields }
func (g *orderedGroup) Encoding() encoding.Encoding       { return nil }
func (g *orderedGroup) Compression() compress.Codec       { return nil }
func (g *orderedGroup) String() string                    { return describeGroup(g) }
func (g *orderedGroup) GoType() reflect.Type              { return goTypeOf(g) }
func (f *orderedField) Name() string                      { return f.name }
func (f *orderedField) Value(reflect.Value) reflect.Value { return reflect.Value{} }

type orderedField struct {
	parquet.Node
	name string
}

func describeGroup(g *orderedGroup) string {
	var b strings.Builder
	b.WriteString("group {")
	for i, f := range g.fields {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.Name() + " " + f.String())
	}
	b.WriteString("}")
	return b.String()
}

// goTypeOf satisfies parquet.Node; the encoder never goes through reflection
// (rows are written as parquet.Row), so a plain struct shape is enough.
func goTypeOf(g *orderedGroup) reflect.Type {
	fs := make([]reflect.StructField, len(g.fields))
	for i, f := range g.fields {
		fs[i] = reflect.StructField{Name: "F" + strconv.Itoa(i), Type: f.GoType(), Tag: reflect.StructTag(`parquet:"` + f.Name() + `"`)}
	}
	return reflect.StructOf(fs)
}

// colPlan is the per-column work of Write, precomputed once.
type colPlan struct {
	kind     dataset.Kind
	optional bool
	index    int
	scale    int
	maxAbs   int64 // 10^precision for int-backed decimals, 0 otherwise
	flba     int   // fixed length for wide decimals
}

type parquetWriter struct {
	ds         dataset.Dataset
	pw         *parquet.Writer
	plan       []colPlan
	row        parquet.Row
	buf        []parquet.Row
	rows       int64
	inGroup    int64
	maxRows    int64
	maxBytes   int64
	closed     bool
	scratch    []byte
	groupStart int64 // pw.Size() after the last flush; Size minus it estimates the buffered group

	// parquet-go compares a dictionary with its limit only when it ends a
	// page, and a page of dictionary indexes holds up to 64k values
	// however long they are; left alone, a column of long unique values
	// would grow its dictionary far past the limit before falling back.
	// pending counts the value bytes each dictionary-encoded column took
	// since its last page (0 for other columns); past pageCut the column's
	// page is ended, so a dictionary never passes the limit by more than
	// pageCut.
	pending []int64
	pageCut int64
}

func newParquet(w io.Writer, ds dataset.Dataset, opts Options) (*parquetWriter, error) {
	schema, err := Schema(ds, opts)
	if err != nil {
		return nil, err
	}
	var codec compress.Codec
	switch fileformat.Parquet.Codec(opts.Compression) {
	case fileformat.Snappy:
		codec = &parquet.Snappy
	case fileformat.Zstd:
		codec = &parquet.Zstd
	default:
		return nil, fmt.Errorf("encode dataset %s: compression %q: %w", ds.Name, opts.Compression, ErrUnsupported)
	}
	pageVersion := 1
	if opts.Profile == ProfileCompact {
		pageVersion = 2
	}
	dictLimit := cmp.Or(opts.tuning.dictionaryLimit, DictionaryLimit)
	pw := parquet.NewWriter(w,
		schema,
		parquet.Compression(codec),
		parquet.DataPageVersion(pageVersion),
		parquet.DataPageStatistics(true),
		parquet.DictionaryMaxBytes(dictLimit), // see parquetWriter.pending
		parquet.PageBufferSize(cmp.Or(opts.tuning.pageBytes, parquet.DefaultPageBufferSize)),
		parquet.CreatedBy("daybook", "", ""),
		parquet.KeyValueMetadata("daybook.dataset", ds.Name),
		parquet.KeyValueMetadata("daybook.schema_version", strconv.Itoa(ds.Version)),
	)
	plan := make([]colPlan, len(ds.Columns))
	for i, c := range ds.Columns {
		p := colPlan{kind: c.Type.Kind, optional: c.Nullable, index: i, scale: c.Type.Scale}
		if c.Type.Kind == dataset.KindDecimal {
			if c.Type.Precision <= 18 {
				p.maxAbs = pow10(c.Type.Precision)
			} else {
				p.flba = decimalBytes(c.Type.Precision)
			}
		}
		plan[i] = p
	}
	pwr := &parquetWriter{
		pending:  make([]int64, len(ds.Columns)),
		pageCut:  max(1, dictLimit/4),
		ds:       ds,
		pw:       pw,
		plan:     plan,
		row:      make(parquet.Row, len(ds.Columns)),
		buf:      make([]parquet.Row, 1),
		maxRows:  opts.MaxRowGroupRows,
		maxBytes: opts.MaxRowGroupBytes,
	}
	if pwr.maxRows <= 0 {
		pwr.maxRows = DefaultMaxRowGroupRows
	}
	if pwr.maxBytes <= 0 {
		pwr.maxBytes = DefaultMaxRowGroupBytes
	}
	return pwr, nil
}

func pow10(n int) int64 {
	v := int64(1)
	for range n {
		v *= 10
	}
	return v
}

// bytesOf views a string as bytes without copying; parquet-go copies values
// into its column buffers and never writes through the slice.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

func (w *parquetWriter) Write(row []any) error {
	if w.closed {
		return ErrClosed
	}
	rowNum := w.rows + 1
	if len(row) != len(w.plan) {
		return &dataset.RowError{Dataset: w.ds.Name, Row: rowNum,
			Reason: fmt.Sprintf("got %d columns, want %d", len(row), len(w.plan))}
	}
	out := w.row[:len(w.plan)]
	cut := false
	for i := range w.plan {
		p := &w.plan[i]
		v := row[i]
		if v == nil {
			if !p.optional {
				return mismatch(w.ds, rowNum, i, v, "null in required column")
			}
			out[i] = parquet.NullValue().Level(0, 0, i)
			continue
		}
		var pv parquet.Value
		ok := true
		switch p.kind {
		case dataset.KindDate:
			var d civil.Date
			d, ok = v.(civil.Date)
			pv = parquet.Int32Value(d.EpochDays())
		case dataset.KindTimestamp:
			var t time.Time
			t, ok = v.(time.Time)
			pv = parquet.Int64Value(t.UnixMicro())
		case dataset.KindInt64:
			var n int64
			n, ok = v.(int64)
			pv = parquet.Int64Value(n)
		case dataset.KindDouble:
			var f float64
			f, ok = v.(float64)
			pv = parquet.DoubleValue(f)
		case dataset.KindBoolean:
			var b bool
			b, ok = v.(bool)
			pv = parquet.BooleanValue(b)
		case dataset.KindString:
			var s string
			s, ok = v.(string)
			pv = parquet.ByteArrayValue(bytesOf(s))
			w.pending[i] += int64(len(s))
			cut = cut || w.pending[i] >= w.pageCut
		case dataset.KindJSON:
			var j json.RawMessage
			j, ok = v.(json.RawMessage)
			pv = parquet.ByteArrayValue(j)
			w.pending[i] += int64(len(j))
			cut = cut || w.pending[i] >= w.pageCut
		case dataset.KindDecimal:
			var d dataset.Decimal
			if d, ok = v.(dataset.Decimal); ok {
				var err string
				if pv, err = w.decimalValue(p, d); err != "" {
					return mismatch(w.ds, rowNum, i, v, err)
				}
			}
		}
		if !ok {
			return mismatch(w.ds, rowNum, i, v, fmt.Sprintf("want %s value, got %T", w.ds.Columns[i].Type, v))
		}
		def := 0
		if p.optional {
			def = 1
		}
		out[i] = pv.Level(0, def, i)
	}
	w.buf[0] = out
	if _, err := w.pw.WriteRows(w.buf); err != nil {
		return fmt.Errorf("encode parquet dataset %s row %d: %w", w.ds.Name, rowNum, err)
	}
	w.rows++
	w.inGroup++
	if cut {
		if err := w.endDictionaryPages(); err != nil {
			return err
		}
	}
	// Checking the size estimate walks every column; every 1024 rows is
	// often enough to stay near the byte limit and cheap enough not to show.
	if w.inGroup >= w.maxRows || (w.inGroup%1024 == 0 && w.pw.Size()-w.groupStart > w.maxBytes) {
		return w.Flush()
	}
	return nil
}

// endDictionaryPages ends the current page of every column that took
// pageCut value bytes since its last one: ending a page is when parquet-go
// checks the dictionary against its limit and falls back to PLAIN.
func (w *parquetWriter) endDictionaryPages() error {
	cols := w.pw.ColumnWriters()
	for i, n := range w.pending {
		if n < w.pageCut {
			continue
		}
		if err := cols[i].Flush(); err != nil {
			return fmt.Errorf("encode parquet dataset %s column %s: end page: %w", w.ds.Name, w.ds.Columns[i].Name, err)
		}
		w.pending[i] = 0
	}
	return nil
}

func (w *parquetWriter) decimalValue(p *colPlan, d dataset.Decimal) (parquet.Value, string) {
	if d.Scale() != p.scale {
		return parquet.Value{}, fmt.Sprintf("decimal scale %d, column scale %d", d.Scale(), p.scale)
	}
	if p.maxAbs > 0 {
		n, ok := d.Int64()
		if !ok || n >= p.maxAbs || n <= -p.maxAbs {
			return parquet.Value{}, "decimal exceeds column precision"
		}
		if p.maxAbs <= 1e9 {
			return parquet.Int32Value(int32(n)), ""
		}
		return parquet.Int64Value(n), ""
	}
	b, ok := twosComplement(w.scratch[:0], d.BigInt(), p.flba)
	if !ok {
		return parquet.Value{}, "decimal exceeds column precision"
	}
	w.scratch = b
	return parquet.FixedLenByteArrayValue(b), ""
}

// twosComplement writes v as a big-endian two's complement number of
// exactly n bytes, as Parquet stores wide decimals.
func twosComplement(dst []byte, v *big.Int, n int) ([]byte, bool) {
	if v.BitLen() >= n*8 {
		return nil, false
	}
	out := append(dst, make([]byte, n)...)
	if v.Sign() >= 0 {
		v.FillBytes(out)
		return out, true
	}
	// -v = ^(v-1): encode |v|-1 and invert every byte.
	m := new(big.Int).Sub(new(big.Int).Neg(v), big.NewInt(1))
	m.FillBytes(out)
	for i := range out {
		out[i] = ^out[i]
	}
	return out, true
}

func (w *parquetWriter) Flush() error {
	if w.closed {
		return ErrClosed
	}
	if w.inGroup == 0 {
		return nil // an empty row group helps no reader
	}
	if err := w.pw.Flush(); err != nil {
		return fmt.Errorf("encode parquet dataset %s: flush row group: %w", w.ds.Name, err)
	}
	w.inGroup = 0
	w.groupStart = w.pw.Size()
	clear(w.pending)
	return nil
}

func (w *parquetWriter) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	if err := w.pw.Close(); err != nil {
		return fmt.Errorf("encode parquet dataset %s: close: %w", w.ds.Name, err)
	}
	return nil
}

func (w *parquetWriter) Rows() int64 { return w.rows }
