package main

import (
	"context"
	"fmt"

	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/bucketdocs"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/layout"
)

// checkDelivered refuses to export a dataset whose declaration in this
// deployment's catalog breaks what the account's bucket already carries:
// the schema document `_schemas/<dataset>.json` the last commit wrote is
// the customer's contract (a column renamed, removed, reordered or retyped
// is refused, naming the column; appending a nullable column is not). It
// runs before Begin, so a refused run leaves the partition as it was. A
// bucket without the document (nothing delivered yet) is not checked, and
// the document is the one of the dataset's contract: a dataset moved to a
// new contract starts that contract's tree, so any change is accepted.
func (e *Exporter) checkDelivered(ctx context.Context, t *target) error {
	key := layout.SchemaKey(t.prefix, t.Dataset.Name)
	b, err := t.bucket.Get(ctx, key, bucketdocs.MaxSchemaBytes)
	switch {
	case bucket.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("read the delivered schema %s: %w", key, err)
	}
	old, err := bucketdocs.Delivered(b)
	if err != nil {
		return fmt.Errorf("the delivered schema %s: %w", key, err)
	}
	if err := dataset.CompatibleContract(old, t.Dataset); err != nil {
		return fmt.Errorf("the catalog does not keep the schema delivered to this bucket (%s): %w", key, err)
	}
	return nil
}
