package encode

import (
	"github.com/parquet-go/parquet-go"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// listNode is a list<T> column's Parquet type, the standard three-level
// LIST the Parquet spec gives (LogicalTypes.md, "Lists"):
//
//	<optional|required> group <name> (LIST) {
//	  repeated group list {
//	    optional <T> element;
//	  }
//	}
//
// The list is OPTIONAL when the column is nullable, the element always
// OPTIONAL (an array may hold NULLs), so a NULL list, an empty list and a
// NULL element are three different things in the file. Elements are
// written PLAIN (no dictionary: the page-cut bound of dictionaryEncoded
// counts top-level values), with the element type's encoding otherwise.
func listNode(c dataset.Column, profile Profile) (parquet.Node, error) {
	ec := c.ElemColumn()
	ec.Dictionary = dataset.DictionaryOff
	elem, err := columnNode(ec, profile)
	if err != nil {
		return nil, err
	}
	node := parquet.List(elem)
	if c.Nullable {
		return parquet.Optional(node), nil
	}
	return parquet.Required(node), nil
}

// listPlan is how a list column's rows become leaf values: one value per
// element, or one NULL for a NULL or empty list, with repetition level 0
// for a row's first value and 1 for the others, and the definition level
// of what is defined (see levels). buf is the column's values, reused.
type listPlan struct {
	col   int
	base  int // definition level of an empty list: 1 if the list is optional
	elem  colPlan
	buf   []parquet.Value
	null  parquet.Value // a NULL list
	empty parquet.Value // an empty list
}

func newListPlan(c dataset.Column, col int) *listPlan {
	lp := &listPlan{col: col}
	if c.Nullable {
		lp.base = 1
	}
	et := c.Type.ElemType()
	lp.elem = colPlan{storage: dataset.StorageOf(et), kind: et.Kind}
	if et.Kind == dataset.KindDecimal {
		lp.elem.int32 = et.Precision <= 9
		if et.Precision > 18 {
			lp.elem.flba = decimalBytes(et.Precision)
		}
	}
	lp.null = parquet.NullValue().Level(0, 0, col)
	lp.empty = parquet.NullValue().Level(0, lp.base, col)
	return lp
}

// values returns the leaf values of rows [lo, hi) of v. The buffer grows
// to the largest chunk seen and is kept: no allocation per row.
func (lp *listPlan) values(v *dataset.Vector, lo, hi int) []parquet.Value {
	out := lp.buf[:0]
	e := v.Elem
	nullElem := lp.base + 1 // the list entry is defined, the element is not
	def := lp.base + 2
	for r := lo; r < hi; r++ {
		if v.IsNull(r) {
			out = append(out, lp.null)
			continue
		}
		a, b := v.List(r)
		if a == b {
			out = append(out, lp.empty)
			continue
		}
		for j := a; j < b; j++ {
			rep := 1
			if j == a {
				rep = 0
			}
			if e.IsNull(j) {
				out = append(out, parquet.NullValue().Level(rep, nullElem, lp.col))
				continue
			}
			out = append(out, lp.elemValue(e, j).Level(rep, def, lp.col))
		}
	}
	lp.buf = out
	return out
}

// elemValue is element j as a parquet value of the element's physical type.
func (lp *listPlan) elemValue(e *dataset.Vector, j int) parquet.Value {
	p := &lp.elem
	switch {
	case p.int32:
		return parquet.Int32Value(int32(e.Int64[j]))
	case p.storage == dataset.StorageInt32:
		return parquet.Int32Value(e.Int32[j])
	case p.storage == dataset.StorageInt64:
		return parquet.Int64Value(e.Int64[j])
	case p.storage == dataset.StorageDouble:
		return parquet.DoubleValue(e.Double[j])
	case p.storage == dataset.StorageBool:
		return parquet.BooleanValue(e.Bool[j])
	case p.flba > 0:
		return parquet.FixedLenByteArrayValue(e.BytesAt(j)[dataset.WideDecimalBytes-p.flba:])
	}
	b := e.BytesAt(j)
	return parquet.ByteArrayValue(b[:len(b):len(b)])
}

// appendList appends row r of a list vector as a JSON array: each element
// as a value of the element type would be (null for a NULL element).
func (w *ndjsonWriter) appendList(line []byte, b *dataset.Batch, v *dataset.Vector, r int) ([]byte, error) {
	lo, hi := v.List(r)
	line = append(line, '[')
	for j := lo; j < hi; j++ {
		if j > lo {
			line = append(line, ',')
		}
		if v.Elem.IsNull(j) {
			line = append(line, "null"...)
			continue
		}
		var err error
		if line, err = w.appendValue(line, b, v.Elem, j); err != nil {
			return line, err
		}
	}
	return append(line, ']'), nil
}
