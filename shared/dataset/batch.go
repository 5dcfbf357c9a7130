package dataset

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
)

// Batch is a block of consecutive rows of one dataset held column by column
// in typed slices: what a source fills and an encoder writes, without a
// boxed value per cell. Ownership: whoever created the batch (a source)
// owns it and its slices and reuses them for the next batch after Reset; a
// consumer (an encoder, an exporter) reads it only during the call it was
// handed in and keeps no reference to it or its slices afterwards.
//
// A batch holds at most Cap rows, and a source also ends it once its byte
// values pass MaxBatchBytes (see Full), so a batch's memory is bounded.
type Batch struct {
	// Dataset is the schema the columns follow.
	Dataset Dataset
	// Cols holds one vector per column, in declared order.
	Cols []Vector
	// FirstRow is the 1-based number, within the partition, of row 0; it
	// only feeds error messages.
	FirstRow int64

	n   int
	cap int
}

// MaxBatchBytes ends a batch (Full) once its string, JSON and wide decimal
// bytes pass it, whatever its row count.
const MaxBatchBytes = 8 << 20

// Storage is how a Vector stores a column's values.
type Storage uint8

// The storages, per column type:
//
//	StorageInt32  date: days since 1970-01-01
//	StorageInt64  timestamp: microseconds since the Unix epoch (UTC); int64;
//	              decimal up to 18 digits: the unscaled value
//	StorageDouble double
//	StorageBool   boolean
//	StorageBytes  string (UTF-8), json (one JSON value), binary (the bytes)
//	              and decimal above 18 digits (the unscaled value, 16 bytes big-endian two's
//	              complement)
const (
	StorageInt32 Storage = iota
	StorageInt64
	StorageDouble
	StorageBool
	StorageBytes
	// StorageList: a list; row i holds the elements
	// Elem[ListOffsets[i]:ListOffsets[i+1]], a vector of the element type
	// (nullable: a NULL element is a NULL in Elem).
	StorageList
)

// WideDecimalBytes is the size of a decimal above 18 digits in a Vector.
const WideDecimalBytes = 16

// StorageOf returns how a Vector stores values of t.
func StorageOf(t Type) Storage {
	switch t.Kind {
	case KindDate:
		return StorageInt32
	case KindTimestamp, KindInt64:
		return StorageInt64
	case KindDecimal:
		if t.Precision <= 18 {
			return StorageInt64
		}
		return StorageBytes
	case KindDouble:
		return StorageDouble
	case KindBoolean:
		return StorageBool
	case KindList:
		return StorageList
	}
	return StorageBytes
}

// Vector is one column of a Batch. Every slice of its storage holds one
// entry per row (a NULL row holds the zero value, or an empty byte span).
type Vector struct {
	Column  Column
	Storage Storage
	// Null[i] reports that row i is NULL; nil for a required column.
	Null    []bool
	Int32   []int32
	Int64   []int64
	Double  []float64
	Bool    []bool
	Bytes   []byte
	Offsets []uint32 // row i is Bytes[Offsets[i]:Offsets[i+1]]; len rows+1
	// A list's elements and where each row's start: len rows+1.
	Elem        *Vector
	ListOffsets []uint32
}

// NewBatch returns an empty batch of ds for up to capacity rows.
func NewBatch(ds Dataset, capacity int) *Batch {
	capacity = max(1, capacity)
	b := &Batch{Dataset: ds, Cols: make([]Vector, len(ds.Columns)), cap: capacity, FirstRow: 1}
	for i, c := range ds.Columns {
		v := &b.Cols[i]
		v.Column, v.Storage = c, StorageOf(c.Type)
		v.init(capacity)
	}
	return b
}

// init makes v's storage for capacity rows.
func (v *Vector) init(capacity int) {
	if v.Column.Nullable {
		v.Null = make([]bool, 0, capacity)
	}
	switch v.Storage {
	case StorageInt32:
		v.Int32 = make([]int32, 0, capacity)
	case StorageInt64:
		v.Int64 = make([]int64, 0, capacity)
	case StorageDouble:
		v.Double = make([]float64, 0, capacity)
	case StorageBool:
		v.Bool = make([]bool, 0, capacity)
	case StorageBytes:
		v.Offsets = append(make([]uint32, 0, capacity+1), 0)
	case StorageList:
		v.ListOffsets = append(make([]uint32, 0, capacity+1), 0)
		v.Elem = newListVector(v.Column, capacity)
	}
}

// Len returns the number of rows.
func (b *Batch) Len() int { return b.n }

// Cap returns the most rows the batch holds.
func (b *Batch) Cap() int { return b.cap }

// Full reports whether a source should hand the batch on before adding a
// row: it holds Cap rows or MaxBatchBytes of byte values.
func (b *Batch) Full() bool {
	if b.n >= b.cap {
		return true
	}
	for i := range b.Cols {
		v := &b.Cols[i]
		if len(v.Bytes) >= MaxBatchBytes || v.Elem != nil && len(v.Elem.Bytes) >= MaxBatchBytes {
			return true
		}
	}
	return false
}

// Reset empties the batch, keeping its memory; firstRow is the partition
// row number of the next row 0.
func (b *Batch) Reset(firstRow int64) {
	b.n, b.FirstRow = 0, firstRow
	for i := range b.Cols {
		b.Cols[i].reset()
	}
}

func (v *Vector) reset() {
	v.Null, v.Int32, v.Int64, v.Double, v.Bool, v.Bytes = v.Null[:0], v.Int32[:0], v.Int64[:0], v.Double[:0], v.Bool[:0], v.Bytes[:0]
	if v.Offsets != nil {
		v.Offsets = v.Offsets[:1]
	}
	if v.Elem != nil {
		v.ListOffsets = v.ListOffsets[:1]
		v.Elem.reset()
	}
}

// Swap exchanges the rows of b and o, two batches of one dataset (made by
// NewBatch): no value is copied. A consumer handed b that must keep its
// rows past the call swaps it with an empty batch of its own, leaving the
// source that empty batch to fill next; the consumer then owns the rows
// (the exporter's pipeline does, so reading overlaps encoding).
func (b *Batch) Swap(o *Batch) {
	b.Cols, o.Cols = o.Cols, b.Cols
	b.n, o.n = o.n, b.n
	b.cap, o.cap = o.cap, b.cap
	b.FirstRow, o.FirstRow = o.FirstRow, b.FirstRow
}

// EndRow closes the row the vectors were appended to: every vector must
// have had exactly one Append call since the previous EndRow.
func (b *Batch) EndRow() { b.n++ }

// RowNum returns the partition row number of row i.
func (b *Batch) RowNum(i int) int64 { return b.FirstRow + int64(i) }

// View makes dst the rows [lo, hi) of b and returns it: its vectors alias
// b's memory (byte offsets stay those of b), so it is valid until b is
// reset, and nothing may be appended to it. dst's column slice is reused.
func (b *Batch) View(lo, hi int, dst *Batch) *Batch {
	cols := dst.Cols[:0]
	for i := range b.Cols {
		v := b.Cols[i]
		if v.Null != nil {
			v.Null = v.Null[lo:hi:hi]
		}
		switch v.Storage {
		case StorageInt32:
			v.Int32 = v.Int32[lo:hi:hi]
		case StorageInt64:
			v.Int64 = v.Int64[lo:hi:hi]
		case StorageDouble:
			v.Double = v.Double[lo:hi:hi]
		case StorageBool:
			v.Bool = v.Bool[lo:hi:hi]
		case StorageBytes:
			v.Offsets = v.Offsets[lo : hi+1 : hi+1]
			v.Bytes = v.Bytes[:len(v.Bytes):len(v.Bytes)]
		case StorageList: // element offsets stay those of b; Elem is b's
			v.ListOffsets = v.ListOffsets[lo : hi+1 : hi+1]
		}
		cols = append(cols, v)
	}
	*dst = Batch{Dataset: b.Dataset, Cols: cols, FirstRow: b.RowNum(lo), n: hi - lo, cap: hi - lo}
	return dst
}

// AppendNull appends a NULL; the caller checks the column is nullable.
func (v *Vector) AppendNull() {
	v.Null = append(v.Null, true)
	switch v.Storage {
	case StorageInt32:
		v.Int32 = append(v.Int32, 0)
	case StorageInt64:
		v.Int64 = append(v.Int64, 0)
	case StorageDouble:
		v.Double = append(v.Double, 0)
	case StorageBool:
		v.Bool = append(v.Bool, false)
	case StorageBytes:
		v.Offsets = append(v.Offsets, uint32(len(v.Bytes)))
	case StorageList:
		v.ListOffsets = append(v.ListOffsets, uint32(v.Elem.Len()))
	}
}

func (v *Vector) notNull() {
	if v.Column.Nullable {
		v.Null = append(v.Null, false)
	}
}

// AppendInt32 appends a date (days since 1970-01-01).
func (v *Vector) AppendInt32(x int32) { v.notNull(); v.Int32 = append(v.Int32, x) }

// AppendInt64 appends a timestamp (Unix microseconds), an int64 or the
// unscaled value of a decimal up to 18 digits.
func (v *Vector) AppendInt64(x int64) { v.notNull(); v.Int64 = append(v.Int64, x) }

// AppendDouble appends a double.
func (v *Vector) AppendDouble(x float64) { v.notNull(); v.Double = append(v.Double, x) }

// AppendBool appends a boolean.
func (v *Vector) AppendBool(x bool) { v.notNull(); v.Bool = append(v.Bool, x) }

// AppendBytes appends a copy of p (a string, a JSON value or a wide decimal).
func (v *Vector) AppendBytes(p []byte) {
	v.notNull()
	v.Bytes = append(v.Bytes, p...)
	v.Offsets = append(v.Offsets, uint32(len(v.Bytes)))
}

// AppendString appends s.
func (v *Vector) AppendString(s string) {
	v.notNull()
	v.Bytes = append(v.Bytes, s...)
	v.Offsets = append(v.Offsets, uint32(len(v.Bytes)))
}

// IsNull reports whether row i is NULL.
func (v *Vector) IsNull(i int) bool { return v.Null != nil && v.Null[i] }

// BytesAt returns row i of a byte vector; it aliases the vector's memory.
func (v *Vector) BytesAt(i int) []byte { return v.Bytes[v.Offsets[i]:v.Offsets[i+1]] }

// Decimal returns row i of a decimal vector.
func (v *Vector) Decimal(i int) Decimal {
	if v.Storage == StorageInt64 {
		return NewDecimal(v.Int64[i], v.Column.Type.Scale)
	}
	return NewDecimalBig(FromTwosComplement(v.BytesAt(i)), v.Column.Type.Scale)
}

// AppendRow appends one row in the value model (see Dataset.Coerce), checking
// its types as CheckRow does. On error the batch is unchanged.
func (b *Batch) AppendRow(row []any) error {
	rowNum := b.RowNum(b.n)
	if len(row) != len(b.Cols) {
		return &RowError{Dataset: b.Dataset.Name, Row: rowNum,
			Reason: fmt.Sprintf("got %d columns, want %d", len(row), len(b.Cols))}
	}
	for i, c := range b.Dataset.Columns {
		if reason := checkModel(c, row[i]); reason != "" {
			if row[i] != nil && strings.HasPrefix(reason, "want ") {
				reason += fmt.Sprintf(", got %T", row[i])
			}
			return &RowError{Dataset: b.Dataset.Name, Row: rowNum, Column: c.Name, Value: row[i], Reason: reason}
		}
	}
	for i := range b.Cols {
		if reason := b.Cols[i].appendModel(row[i]); reason != "" {
			b.truncate(i)
			return &RowError{Dataset: b.Dataset.Name, Row: rowNum, Column: b.Cols[i].Column.Name, Value: row[i], Reason: reason}
		}
	}
	b.n++
	return nil
}

// truncate drops the values appended to the first cols vectors after the
// last whole row.
func (b *Batch) truncate(cols int) {
	for i := range cols {
		b.Cols[i].truncateTo(b.n)
	}
}

// truncateTo drops the values after the first n.
func (v *Vector) truncateTo(n int) {
	if v.Null != nil {
		v.Null = v.Null[:n]
	}
	switch v.Storage {
	case StorageInt32:
		v.Int32 = v.Int32[:n]
	case StorageInt64:
		v.Int64 = v.Int64[:n]
	case StorageDouble:
		v.Double = v.Double[:n]
	case StorageBool:
		v.Bool = v.Bool[:n]
	case StorageBytes:
		v.Offsets = v.Offsets[:n+1]
		v.Bytes = v.Bytes[:v.Offsets[n]]
	case StorageList:
		v.ListOffsets = v.ListOffsets[:n+1]
		v.Elem.truncateTo(int(v.ListOffsets[n]))
	}
}

// appendModel appends a value already of the column's model type (or nil).
func (v *Vector) appendModel(x any) string {
	if x == nil {
		v.AppendNull()
		return ""
	}
	switch x := x.(type) {
	case civil.Date:
		v.AppendInt32(x.EpochDays())
	case time.Time:
		v.AppendInt64(x.UnixMicro())
	case int64:
		v.AppendInt64(x)
	case float64:
		v.AppendDouble(x)
	case bool:
		v.AppendBool(x)
	case string:
		v.AppendString(x)
	case json.RawMessage:
		v.AppendBytes(x)
	case []byte:
		v.AppendBytes(x)
	case []any:
		if v.Storage != StorageList {
			return fmt.Sprintf("want %s value", v.Column.Type)
		}
		return v.listModel(x)
	case Decimal:
		if v.Storage == StorageInt64 {
			n, _ := x.Int64() // CheckRow checked the precision
			v.AppendInt64(n)
			return ""
		}
		var buf [WideDecimalBytes]byte
		if !TwosComplement(buf[:], x.BigInt()) {
			return fmt.Sprintf("decimal does not fit %s", v.Column.Type)
		}
		v.AppendBytes(buf[:])
	default:
		return fmt.Sprintf("want %s value", v.Column.Type)
	}
	return ""
}

// Row returns row i in the value model, appended to dst[:0]. It allocates;
// it is for tests and tools, not for a hot path.
func (b *Batch) Row(i int, dst []any) []any {
	dst = dst[:0]
	for c := range b.Cols {
		dst = append(dst, b.Cols[c].valueAt(i))
	}
	return dst
}

// valueAt returns value i in the value model (nil for NULL).
func (v *Vector) valueAt(i int) any {
	if v.IsNull(i) {
		return nil
	}
	var x any
	switch v.Column.Type.Kind {
	case KindDate:
		x = civil.FromEpochDays(v.Int32[i])
	case KindTimestamp:
		x = time.UnixMicro(v.Int64[i]).UTC()
	case KindInt64:
		x = v.Int64[i]
	case KindDouble:
		x = v.Double[i]
	case KindBoolean:
		x = v.Bool[i]
	case KindString:
		x = string(v.BytesAt(i))
	case KindJSON:
		x = json.RawMessage(append([]byte(nil), v.BytesAt(i)...))
	case KindBinary:
		x = append([]byte{}, v.BytesAt(i)...)
	case KindDecimal:
		x = v.Decimal(i)
	case KindList:
		lo, hi := v.List(i)
		l := make([]any, 0, hi-lo)
		for j := lo; j < hi; j++ {
			l = append(l, v.Elem.valueAt(j))
		}
		x = l
	}
	return x
}

// TwosComplement writes v into dst as a big-endian two's complement number
// of len(dst) bytes; it reports false if v does not fit.
func TwosComplement(dst []byte, v *big.Int) bool {
	if v.BitLen() >= len(dst)*8 {
		return false
	}
	if v.Sign() >= 0 {
		v.FillBytes(dst)
		return true
	}
	// -v = ^(v-1): encode |v|-1 and invert every byte.
	m := new(big.Int).Sub(new(big.Int).Neg(v), big.NewInt(1))
	m.FillBytes(dst)
	for i := range dst {
		dst[i] = ^dst[i]
	}
	return true
}

// FromTwosComplement reads a big-endian two's complement number.
func FromTwosComplement(p []byte) *big.Int {
	v := new(big.Int).SetBytes(p)
	if len(p) > 0 && p[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(len(p)*8)))
	}
	return v
}

// String describes the batch for debugging.
func (b *Batch) String() string {
	var s strings.Builder
	fmt.Fprintf(&s, "batch of %s: rows %d..%d", b.Dataset.Name, b.FirstRow, b.FirstRow+int64(b.n)-1)
	return s.String()
}
