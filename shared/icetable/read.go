package icetable

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
)

// RowsPerDay reads the table's current snapshot with iceberg-go, every row
// of every data file, and counts its rows per UTC day of the dataset's
// partition column: what a reader of the table gets, for the checks that
// compare it with each day's _manifest.json. A table with no snapshot has
// no rows.
func RowsPerDay(ctx context.Context, tbl *table.Table, ds dataset.Dataset) (map[civil.Date]int64, error) {
	got := map[civil.Date]int64{}
	if tbl.CurrentSnapshot() == nil {
		return got, nil
	}
	at, err := tbl.Scan(table.WithSelectedFields(ds.PartitionColumn)).ToArrowTable(ctx)
	if err != nil {
		return nil, fmt.Errorf("scan the table: %w", err)
	}
	defer at.Release()
	idx := at.Schema().FieldIndices(ds.PartitionColumn)
	if len(idx) != 1 {
		return nil, fmt.Errorf("scan the table: no column %s", ds.PartitionColumn)
	}
	rr := array.NewTableReader(at, 4096)
	defer rr.Release()
	for rr.Next() {
		switch col := rr.RecordBatch().Column(idx[0]).(type) {
		case *array.Timestamp:
			for i := range col.Len() {
				got[civil.Of(col.Value(i).ToTime(arrow.Microsecond))]++
			}
		case *array.Date32:
			for i := range col.Len() {
				got[civil.Of(col.Value(i).ToTime())]++
			}
		default:
			return nil, fmt.Errorf("scan the table: partition column %s is %s", ds.PartitionColumn, col.DataType())
		}
	}
	return got, rr.Err()
}
