// Package layout is the object layout contract of a delivery (F1): the
// customer's prefix template and every key daybook writes under it.
//
//	<prefix>/v1/<dataset>/dt=YYYY-MM-DD/part-00000.parquet   data (part-*)
//	<prefix>/v1/<dataset>/dt=YYYY-MM-DD/_manifest.json       metadata (leading underscore)
//	<prefix>/v1/<dataset>/dt=YYYY-MM-DD/_SUCCESS             commit marker, written last
//	<prefix>/v1/<dataset>/dt=YYYY-MM-DD/_load/<engine>.sql   load scripts
//	<prefix>/v1/_manifests/dt=YYYY-MM-DD/manifest.json       per-account delivery manifest (F4)
//	<prefix>/v1/README.md                                     how to read the bucket, for the customer
//	<prefix>/v1/_schemas/<dataset>.json                       each dataset's columns and meaning
//	<prefix>/v1/_changes/<commit time>_<dataset>_<day>_<generation>.json   change log: one per committed generation
//
// `v1` is the dataset's contract version (dataset.Dataset.Contract): a
// dataset at `contract: v2` is delivered under `<prefix>/v2/<dataset>/`, with
// its schema at `<prefix>/v2/_schemas/<dataset>.json`, and its `v1/` tree
// stays as it was. The account-level documents (README, `_manifests`,
// `_changes`) stay at `<prefix>/v1/`, the bucket's one entry point: each
// entry in them names its dataset's contract and keys. Data files start with `part-` and metadata with
// `_`, so a loader globbing `dt=*/part-*` never reads a manifest or a script.
//
// The prefix is a template with two placeholders only, {{.AccountID}} and
// {{.Stage}} (opaque ids, F2); {{.AccountID}} must be one whole segment of it
// (C4). Its characters are limited to a safe set and every key it can produce
// fits S3's key limit: see prefix.go. Nothing is escaped: a prefix is the
// customer's choice of key names within those rules.
//
// Days are civil.Date values; a data file's extension is its format's
// (fileformat.Format.Extension).
package layout

import (
	"fmt"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
)

// Version is the first layout contract, the `v1` segment: the contract of a
// dataset that declares none, and the root of the account-level documents.
const Version = dataset.DefaultContract

// Placeholders accepted in a prefix template.
const (
	PlaceholderAccountID = "{{.AccountID}}"
	PlaceholderStage     = "{{.Stage}}"
)

// File names under a partition.
const (
	ManifestName = "_manifest.json"
	SuccessName  = "_SUCCESS"
	LoadDir      = "_load"
	DataPrefix   = "part-"
	// DeliveryManifestsDir is the dataset-level folder of per-day delivery manifests (F4).
	DeliveryManifestsDir = "_manifests"
	// ReadmeName is the README at the contract root, `<prefix>/v1/README.md`.
	ReadmeName = "README.md"
	// SchemasDir is the contract-root folder of per-dataset schema documents.
	SchemasDir = "_schemas"
	// ChangesDir is the contract-root folder of the change log.
	ChangesDir = "_changes"
)

func clean(prefix string) string { return strings.TrimSuffix(prefix, "/") }

// PartitionPrefix is `<prefix>/<contract>/<dataset>/dt=YYYY-MM-DD/` (trailing slash).
// prefix is a rendered prefix (RenderPrefix); ds is a ledger name
// (DatasetPrefix).
func PartitionPrefix(prefix, ds string, day civil.Date) string {
	return DatasetPrefix(prefix, ds) + "dt=" + day.String() + "/"
}

// DatasetPrefix is `<prefix>/<contract>/<dataset>/` (trailing slash): the
// dataset's folder under its contract. ds is a ledger name
// (Dataset.LedgerName): its contract is the one it carries, v1 when it
// carries none (dataset.ContractOf); a caller holding a catalog name passes
// the catalog's ledger name for it (Set.Current).
func DatasetPrefix(prefix, ds string) string {
	name, _ := dataset.SplitLedgerName(ds)
	return ContractRoot(prefix, dataset.ContractOf(ds)) + name + "/"
}

// ContractRoot is `<prefix>/<contract>/` (trailing slash).
func ContractRoot(prefix, contract string) string {
	return clean(prefix) + "/" + contract + "/"
}

// DataKey is the key of data file n: `.../part-00000.parquet`. ext is the
// file format's extension (fileformat.Format.Extension).
func DataKey(prefix, dataset string, day civil.Date, n int, ext string) string {
	return fmt.Sprintf("%s%s%05d%s", PartitionPrefix(prefix, dataset, day), DataPrefix, n, ext)
}

// SliceDataKey is the key of data file n of slice i of a partition exported
// in slices (E7): `.../part-s0003-00000.parquet`. Like Redshift UNLOAD's
// slice-numbered parts, the names keep the part- prefix and sort in slice
// order, then file order.
func SliceDataKey(prefix, dataset string, day civil.Date, slice, n int, ext string) string {
	return fmt.Sprintf("%s%ss%04d-%05d%s", PartitionPrefix(prefix, dataset, day), DataPrefix, slice, n, ext)
}

// ManifestKey is `.../_manifest.json`.
func ManifestKey(prefix, dataset string, day civil.Date) string {
	return PartitionPrefix(prefix, dataset, day) + ManifestName
}

// SuccessKey is `.../_SUCCESS`.
func SuccessKey(prefix, dataset string, day civil.Date) string {
	return PartitionPrefix(prefix, dataset, day) + SuccessName
}

// LoadKey is `.../_load/<engine>.sql`.
func LoadKey(prefix, dataset string, day civil.Date, engine string) string {
	return PartitionPrefix(prefix, dataset, day) + LoadDir + "/" + engine + ".sql"
}

// ContractPrefix is `<prefix>/v1/` (trailing slash), the root of the
// account-level documents; a dataset at a later contract has its folder
// and schema under that contract's root (ContractRoot).
func ContractPrefix(prefix string) string {
	return ContractRoot(prefix, Version)
}

// ReadmeKey is `<prefix>/v1/README.md`.
func ReadmeKey(prefix string) string {
	return ContractPrefix(prefix) + ReadmeName
}

// SchemaKey is `<prefix>/<contract>/_schemas/<dataset>.json`, under the
// dataset's contract (as DatasetPrefix).
func SchemaKey(prefix, ds string) string {
	name, _ := dataset.SplitLedgerName(ds)
	return ContractSchemaKey(prefix, dataset.ContractOf(ds), name)
}

// ContractSchemaKey is `<prefix>/<contract>/_schemas/<dataset>.json`.
func ContractSchemaKey(prefix, contract, name string) string {
	return ContractRoot(prefix, contract) + SchemasDir + "/" + name + ".json"
}

// DeliveryManifestKey is `<prefix>/v1/_manifests/dt=YYYY-MM-DD/manifest.json` (F4).
func DeliveryManifestKey(prefix string, day civil.Date) string {
	return clean(prefix) + "/" + Version + "/" + DeliveryManifestsDir + "/dt=" + day.String() + "/manifest.json"
}

// ChangesPrefix is `<prefix>/v1/_changes/`.
func ChangesPrefix(prefix string) string { return ContractPrefix(prefix) + ChangesDir + "/" }

// ChangeKey is the change-log key of one committed generation,
// `<prefix>/v1/_changes/<YYYYMMDDTHHMMSSZ>_<dataset>_<day>_<generation>.json`
// with the commit time in UTC and the generation zero-padded to ten
// digits: keys sort by commit time, and the same generation always has the
// same key, so writing its entry again replaces it.
func ChangeKey(prefix string, committedAt time.Time, ds string, day civil.Date, generation int64) string {
	name, _ := dataset.SplitLedgerName(ds)
	return fmt.Sprintf("%s%s_%s_%s_%010d.json", ChangesPrefix(prefix), committedAt.UTC().Format("20060102T150405Z"), name, day, generation)
}

// IsDataKey reports whether key is a data file of a partition: its last segment
// starts with `part-`, and it sits directly in a `dt=` folder.
func IsDataKey(key string) bool {
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return false
	}
	name, dir := key[i+1:], key[:i]
	j := strings.LastIndexByte(dir, '/')
	return strings.HasPrefix(name, DataPrefix) && len(name) > len(DataPrefix) && strings.HasPrefix(dir[j+1:], "dt=")
}
