// Package sourcetest reads a source.Source row by row, for tests and the
// development tools (the exporter consumes batches).
package sourcetest

import (
	"context"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/source"
)

// Rows reads src's partition row by row, in the value model: fn gets a
// fresh row per call that it may keep.
func Rows(ctx context.Context, src source.Source, q source.Query, fn func(row []any) error) (source.Provenance, error) {
	return src.Batches(ctx, q, func(b *dataset.Batch) error {
		for i := range b.Len() {
			if err := fn(b.Row(i, nil)); err != nil {
				return err
			}
		}
		return nil
	})
}
