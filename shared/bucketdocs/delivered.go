package bucketdocs

import (
	"encoding/json"
	"fmt"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// Delivered reads a schema document back into the contract part of the
// dataset it describes (name, contract, version, partition semantics, mode, read,
// columns with their types and version bookkeeping): what a customer
// already has, for dataset.Compatible to compare a catalog with. Queries
// and source fields are not in it.
func Delivered(b []byte) (dataset.Dataset, error) {
	var doc SchemaDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return dataset.Dataset{}, fmt.Errorf("read schema document: %w", err)
	}
	if doc.Dataset == "" || doc.SchemaVersion < 1 || len(doc.Columns) == 0 {
		return dataset.Dataset{}, fmt.Errorf("read schema document: not a dataset schema (dataset %q, schema_version %d, %d columns)", doc.Dataset, doc.SchemaVersion, len(doc.Columns))
	}
	d := dataset.Dataset{Name: doc.Dataset, Version: doc.SchemaVersion, Partition: doc.Partition.Semantics,
		Mode: doc.Mode.Value, Read: doc.Read.Value, Contract: doc.Contract}
	if doc.CurrentState != nil {
		d.IDColumn, d.OrderColumn = doc.CurrentState.IDColumn, doc.CurrentState.OrderColumn
	}
	for _, c := range doc.Columns {
		t, err := dataset.ParseType(c.Type)
		if err != nil {
			return dataset.Dataset{}, fmt.Errorf("read schema document of %s: column %s: %w", doc.Dataset, c.Name, err)
		}
		d.Columns = append(d.Columns, dataset.Column{Name: c.Name, Type: t, Nullable: c.Nullable, Since: c.Since, NullableSince: c.NullableSince})
	}
	return d, nil
}
