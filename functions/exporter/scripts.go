package main

import (
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/loadsql"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// loadScripts renders the `_load/` files written beside each partition
// (Q1), from the same schema and manifest as the data.
func loadScripts(ds dataset.Dataset, m *manifest.Manifest, bucket, partitionPrefix string) (map[string][]byte, error) {
	p, err := loadsql.ForManifest(ds, m, bucket, partitionPrefix)
	if err != nil {
		return nil, err
	}
	return loadsql.Scripts(p)
}
