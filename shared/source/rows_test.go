package source

import (
	"context"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// Rows reads src's partition row by row (sourcetest.Rows, which this
// package's tests cannot import).
func Rows(ctx context.Context, src Source, q Query, fn func(row []any) error) (Provenance, error) {
	return src.Batches(ctx, q, func(b *dataset.Batch) error {
		for i := range b.Len() {
			if err := fn(b.Row(i, nil)); err != nil {
				return err
			}
		}
		return nil
	})
}
