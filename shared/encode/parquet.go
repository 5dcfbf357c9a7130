package encode

import (
	"fmt"
	"math/big"
	"reflect"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// Schema builds the Parquet schema of ds: columns in declared order, exact
// logical types (F5), required columns REQUIRED and nullable ones
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
	if c.Type.Kind == dataset.KindList {
		return listNode(c, profile)
	}
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
	case dataset.KindBinary:
		node = binaryNode()
	case dataset.KindString, dataset.KindJSON:
		// Every string and JSON column, declared low-cardinality or not: a
		// dictionary is what makes repeated ids and attribute objects small,
		// and the dictionary limit bounds what a unique column costs. A
		// column declared high-cardinality (an id) is PLAIN from the start:
		// see dictionaryEncoded.
		node = parquet.String()
		if c.Type.Kind == dataset.KindJSON {
			node = parquet.JSON()
		}
		if dictionaryEncoded(c) {
			enc = &parquet.RLEDictionary
		}
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

// dictionaryEncoded reports whether the column is written with a
// dictionary: every string and JSON column but those the dataset declares
// high-cardinality ("dictionary": false, dataset.DictionaryOff). Such a
// column, an id whose every value is distinct, would fill its dictionary to
// DictionaryLimit in every row group and fall back to PLAIN for the rest:
// the dictionary costs a map insert per value and a lookup per value for
// page statistics until then, and saves nothing. Declared, it is written
// PLAIN from its first value, as DuckDB writes it (its writer measures a
// column's distinct values first). The choice is per column and the same
// for every row group: parquet-go fixes a column's encoding in the schema,
// and its only switch is the fallback past DictionaryMaxBytes, one bound
// for every column, checked when a page ends.
func dictionaryEncoded(c dataset.Column) bool {
	k := c.Type.Kind
	return (k == dataset.KindString || k == dataset.KindJSON) && c.Dictionary != dataset.DictionaryOff
}

// decimalBytes is the fixed length that holds any unscaled value of
// precision p in two's complement (the Parquet spec's minimum).
func decimalBytes(p int) int {
	max := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil)
	return (max.BitLen() + 1 + 7) / 8 // +1 for the sign bit
}

// orderedGroup is a Parquet group that keeps its fields in declared order.
// parquet.Group is a map and sorts fields by name, which would break the
// declared column order (D1/D2).
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

func (w *parquetWriter) Flush() error {
	if w.closed {
		return ErrClosed
	}
	if err := w.flushRows(); err != nil {
		return err
	}
	return w.endRowGroup()
}

// endRowGroup writes the buffered row group out.
func (w *parquetWriter) endRowGroup() error {
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
	if err := w.flushRows(); err != nil {
		return err
	}
	w.closed = true
	if err := w.pw.Close(); err != nil {
		return fmt.Errorf("encode parquet dataset %s: close: %w", w.ds.Name, err)
	}
	return nil
}

func (w *parquetWriter) Rows() int64 { return w.rows + int64(w.rowBuf.pending()) }
