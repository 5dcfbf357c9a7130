package icetable

import (
	"fmt"

	"github.com/apache/iceberg-go"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// PartitionField is the name of the table's one partition field: the day,
// as the folders name it (dt=YYYY-MM-DD).
const PartitionField = "dt"

// partitionFieldID is the id of the dt partition field (Iceberg's first
// partition field id).
const partitionFieldID = 1000

// typeOf is the Iceberg type of a column: the type its Parquet files
// carry (shared/encode), so an engine reads them as they are.
func typeOf(c dataset.Column) (iceberg.Type, error) {
	switch c.Type.Kind {
	case dataset.KindDate:
		return iceberg.PrimitiveTypes.Date, nil
	case dataset.KindTimestamp:
		return iceberg.PrimitiveTypes.TimestampTz, nil
	case dataset.KindInt64:
		return iceberg.PrimitiveTypes.Int64, nil
	case dataset.KindDouble:
		return iceberg.PrimitiveTypes.Float64, nil
	case dataset.KindDecimal:
		return iceberg.DecimalTypeOf(c.Type.Precision, c.Type.Scale), nil
	case dataset.KindBoolean:
		return iceberg.PrimitiveTypes.Bool, nil
	case dataset.KindString, dataset.KindJSON:
		return iceberg.PrimitiveTypes.String, nil
	case dataset.KindBinary:
		return iceberg.PrimitiveTypes.Binary, nil
	}
	return nil, fmt.Errorf("column %s: type %s has no Iceberg type here", c.Name, c.Type.Kind)
}

// SchemaOf is the dataset's schema as an Iceberg schema: its columns in
// order, with their descriptions as docs. Ids are positions; the table
// keeps the ids it assigned, and a later schema version's appended columns
// join it by name (UnionByNameWith) with the next free ids, so an id never
// changes. A column is required only when it always was: present since
// version 1 and never nullable (an appended column is absent from older
// files, so it is optional).
func SchemaOf(ds dataset.Dataset) (*iceberg.Schema, error) {
	fields := make([]iceberg.NestedField, 0, len(ds.Columns))
	for i, c := range ds.Columns {
		t, err := typeOf(c)
		if err != nil {
			return nil, fmt.Errorf("dataset %s: %w", ds.Name, err)
		}
		fields = append(fields, iceberg.NestedField{ID: i + 1, Name: c.Name, Type: t, Doc: c.Description,
			Required: !c.Nullable && c.Since <= 1 && c.NullableSince == 0})
	}
	return iceberg.NewSchema(0, fields...), nil
}

// specOf partitions sc by the day of the dataset's partition column: day()
// of a timestamp (the account's days are UTC days: see the account's
// destination rules), the date itself for a date column.
func specOf(ds dataset.Dataset, sc *iceberg.Schema) (iceberg.PartitionSpec, error) {
	f, ok := sc.FindFieldByName(ds.PartitionColumn)
	if !ok {
		return iceberg.PartitionSpec{}, fmt.Errorf("dataset %s: partition_column %q is not a column", ds.Name, ds.PartitionColumn)
	}
	var tr iceberg.Transform
	switch f.Type.(type) {
	case iceberg.TimestampTzType:
		tr = iceberg.DayTransform{}
	case iceberg.DateType:
		tr = iceberg.IdentityTransform{}
	default:
		return iceberg.PartitionSpec{}, fmt.Errorf("dataset %s: partition_column %q is %s, not a date or timestamp", ds.Name, ds.PartitionColumn, f.Type)
	}
	id := partitionFieldID
	return iceberg.NewPartitionSpecOpts(iceberg.AddPartitionFieldBySourceID(f.ID, PartitionField, tr, sc, &id))
}
