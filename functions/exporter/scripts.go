package main

import (
	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/loadsql"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// loadScripts renders the `_load/` files written beside each partition
// (Q1), from the same schema and manifest as the data, for the engines
// that read d's store.
func loadScripts(ds dataset.Dataset, m *manifest.Manifest, d account.Destination, partitionPrefix string) (map[string][]byte, error) {
	p, err := loadsql.ForManifest(ds, m, d.Bucket, partitionPrefix)
	if err != nil {
		return nil, err
	}
	return loadsql.Scripts(placed(p, d))
}

// placed is p on d's store: loadsql's Store (the same names as
// destination.store) and, on Azure, the storage account.
func placed(p loadsql.Partition, d account.Destination) loadsql.Partition {
	p.Store, p.AzureAccount = string(d.Kind()), d.StorageAccount
	return p
}
