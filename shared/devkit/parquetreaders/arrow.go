package parquetreaders

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// ReadArrow decodes the file at path with Apache Arrow's Go Parquet reader
// (parquet/file for the schema, pqarrow for the values).
func ReadArrow(path string) (*Table, error) {
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, fmt.Errorf("arrow: open %s: %w", path, err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("arrow: %s: %w", path, err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		return nil, fmt.Errorf("arrow: read %s: %w", path, err)
	}
	defer tbl.Release()

	sc := rdr.MetaData().Schema
	if sc.NumColumns() != int(tbl.NumCols()) {
		return nil, fmt.Errorf("arrow: %s: %d leaf columns, %d arrow columns", path, sc.NumColumns(), tbl.NumCols())
	}
	out := &Table{Reader: "arrow", Rows: make([][]Value, tbl.NumRows())}
	for r := range out.Rows {
		out.Rows[r] = make([]Value, tbl.NumCols())
	}
	for c := range int(tbl.NumCols()) {
		leaf := arrowColumn(sc.Column(c))
		col := leaf
		if root := sc.ColumnRoot(c); root.Type() == schema.Group {
			col = arrowList(root, leaf)
		}
		field := tbl.Schema().Field(c)
		col.Engine = field.Type.String()
		out.Columns = append(out.Columns, col)
		row := 0
		for _, chunk := range tbl.Column(c).Data().Chunks() {
			for i := range chunk.Len() {
				v, err := arrowValue(chunk, i, leaf.Logical == "")
				if err != nil {
					return nil, fmt.Errorf("arrow: %s: column %s row %d: %w", path, col.Name, row+1, err)
				}
				out.Rows[row][c] = v
				row++
			}
		}
	}
	return out, nil
}

func arrowColumn(c *schema.Column) Column {
	col := Column{Name: c.Name(), Physical: c.PhysicalType().String(), Repetition: "REQUIRED"}
	if c.PhysicalType() == parquet.Types.FixedLenByteArray {
		col.Physical += "(" + strconv.Itoa(c.TypeLength()) + ")"
	}
	if c.SchemaNode().RepetitionType() == parquet.Repetitions.Optional {
		col.Repetition = "OPTIONAL"
	}
	switch lt := c.LogicalType().(type) {
	case schema.NoLogicalType, nil:
	case schema.DateLogicalType:
		col.Logical = "DATE"
	case schema.TimestampLogicalType:
		zone := "LOCAL"
		if lt.IsAdjustedToUTC() {
			zone = "UTC"
		}
		col.Logical = "TIMESTAMP(" + strings.ToUpper(timeUnit(lt.TimeUnit())) + "," + zone + ")"
	case schema.DecimalLogicalType:
		col.Logical = fmt.Sprintf("DECIMAL(%d,%d)", lt.Precision(), lt.Scale())
	case schema.IntLogicalType:
		col.Logical = integerName(int(lt.BitWidth()), lt.IsSigned())
	case schema.StringLogicalType:
		col.Logical = "STRING"
	case schema.JSONLogicalType:
		col.Logical = "JSON"
	default:
		col.Logical = "other:" + lt.String()
	}
	return col
}

// arrowList describes a top-level group: a three-level LIST (see the
// package comment) whose leaf is elem, or "other:" what it is instead.
func arrowList(root schema.Node, elem Column) Column {
	col := Column{Name: root.Name(), Physical: elem.Physical, Repetition: "REQUIRED"}
	if root.RepetitionType() == parquet.Repetitions.Optional {
		col.Repetition = "OPTIONAL"
	}
	g := root.(*schema.GroupNode)
	_, isList := g.LogicalType().(schema.ListLogicalType)
	if !isList || g.NumFields() != 1 {
		col.Logical = "other:group " + g.LogicalType().String()
		return col
	}
	rep, ok := g.Field(0).(*schema.GroupNode)
	if !ok || rep.RepetitionType() != parquet.Repetitions.Repeated || rep.NumFields() != 1 || rep.Field(0).Type() != schema.Primitive {
		col.Logical = "other:LIST not of three levels"
		return col
	}
	col.Logical = ListLogical(elem)
	return col
}

func timeUnit(u schema.TimeUnitType) string {
	switch u {
	case schema.TimeUnitMillis:
		return "millis"
	case schema.TimeUnitMicros:
		return "micros"
	case schema.TimeUnitNanos:
		return "nanos"
	}
	return "unknown"
}

// arrowValue is row i of a as canonical text; binaryColumn says a byte
// array without an annotation (binary, as hex) rather than JSON (text). A
// list's elements are read the same way (its leaf's annotation).
func arrowValue(a arrow.Array, i int, binaryColumn bool) (Value, error) {
	if a.IsNull(i) {
		return Null, nil
	}
	switch x := a.(type) {
	case *array.List:
		lo, hi := x.ValueOffsets(i)
		elems := make([]Value, 0, hi-lo)
		for j := lo; j < hi; j++ {
			if _, nested := x.ListValues().(*array.List); nested {
				return Null, fmt.Errorf("a list of lists")
			}
			e, err := arrowValue(x.ListValues(), int(j), binaryColumn)
			if err != nil {
				return Null, fmt.Errorf("element %d: %w", j-lo, err)
			}
			elems = append(elems, e)
		}
		return ListText(elems), nil
	case *array.Date32:
		return Text(strconv.FormatInt(int64(x.Value(i)), 10)), nil
	case *array.Timestamp:
		if u := x.DataType().(*arrow.TimestampType).Unit; u != arrow.Microsecond {
			return Null, fmt.Errorf("timestamp unit %s", u)
		}
		return Text(strconv.FormatInt(int64(x.Value(i)), 10)), nil
	case *array.Int64:
		return Text(strconv.FormatInt(x.Value(i), 10)), nil
	case *array.Float64:
		return Text(FormatDouble(x.Value(i))), nil
	case *array.Boolean:
		return Text(strconv.FormatBool(x.Value(i))), nil
	case *array.Decimal128:
		scale := x.DataType().(*arrow.Decimal128Type).Scale
		return Text(dataset.NewDecimalBig(x.Value(i).BigInt(), int(scale)).String()), nil
	case *array.String:
		return Text(x.Value(i)), nil
	case *array.Binary:
		if binaryColumn {
			return Text(hex.EncodeToString(x.Value(i))), nil
		}
		return Text(string(x.Value(i))), nil
	}
	return Null, fmt.Errorf("unexpected arrow array %s", a.DataType())
}
