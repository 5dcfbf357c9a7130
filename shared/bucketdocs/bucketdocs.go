// Package bucketdocs generates the documents that make a customer's bucket
// explain itself: `<prefix>/v1/README.md` (the layout, when a day is ready,
// the delivery manifest and its missing-reason codes, what each dataset's day
// means and how to read it, how to load it with each engine, reseeds, and how
// to verify a partition with read access only) and one
// `<prefix>/v1/_schemas/<dataset>.json` per dataset (columns, types,
// nullability, descriptions, the schema version each column was added in,
// partition semantics, mode and read).
//
// Everything is generated from the dataset catalog and what the account
// receives (Input): no clock, no randomness, no map iteration, so the same
// input gives the same bytes and a writer can skip a rewrite by comparing
// hashes. Nothing here may name anything internal to the sender (source
// databases, hosts, users, queries, requirement ids): the tests scan the
// output for such strings.
package bucketdocs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
)

// FormatVersion is the version of the schema document format
// (`_schemas/<dataset>.json`); bump on an incompatible change.
const FormatVersion = 1

// DefaultMaxFileBytes is the file size the README states when
// Input.MaxFileBytes is zero: the exporter's default.
const DefaultMaxFileBytes int64 = 256 << 20

// Input is what one account receives: with the catalog declarations in
// Datasets, everything the documents say.
type Input struct {
	Bucket string
	// BaseURI is the bucket's root as its store's readers name it
	// (gs://bucket/, abfss://container@account.dfs.core.windows.net/);
	// empty: s3://Bucket/.
	BaseURI string
	// BucketFlag is the bucket as `daybook verify --bucket` takes it
	// (gs://bucket, az://account/container); empty: Bucket.
	BucketFlag string
	// Prefix is the account's rendered prefix (layout.RenderPrefix), the
	// part of every key before `/v1/`.
	Prefix      string
	Format      fileformat.Format
	Compression fileformat.Codec // empty: the format's default
	// TimeZone is the IANA zone whose calendar days the partitions are.
	TimeZone string
	// SettleDelay is waited after a day ends before it is exported.
	SettleDelay time.Duration
	// MaxFileBytes is the size past which a day rolls to its next data
	// file (0: DefaultMaxFileBytes).
	MaxFileBytes int64
	// Datasets are the datasets the account receives, in its order.
	Datasets []dataset.Dataset
	// Iceberg: each dataset is also an Apache Iceberg table in its folder
	// (destination.table_format iceberg).
	Iceberg bool
	// Store is where the bucket is: loadsql.StoreS3 (when empty),
	// loadsql.StoreGCS or loadsql.StoreAzure (Bucket is then the
	// container of the storage account AzureAccount). It decides which
	// load scripts there are.
	Store        string
	AzureAccount string
}

// base is the bucket's root URI.
func (in Input) base() string {
	if in.BaseURI != "" {
		return in.BaseURI
	}
	return "s3://" + in.Bucket + "/"
}

// bucketFlag is verify's --bucket.
func (in Input) bucketFlag() string {
	if in.BucketFlag != "" {
		return in.BucketFlag
	}
	return in.Bucket
}

// File is one generated document and where it goes.
type File struct {
	Key         string // full object key
	Body        []byte
	ContentType string
	SHA256      string // hex SHA-256 of Body
}

// Content types of the documents.
const (
	ContentTypeMarkdown = "text/markdown; charset=utf-8"
	ContentTypeJSON     = "application/json"
)

// ErrInvalid is wrapped by every refusal of an Input.
var ErrInvalid = errors.New("bucketdocs")

func (in Input) validate() error {
	if in.Bucket == "" {
		return fmt.Errorf("%w: Bucket is empty", ErrInvalid)
	}
	if err := layout.ValidateRendered(in.Prefix); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if _, err := fileformat.Parse(string(in.Format)); err != nil || in.Format == "" {
		return fmt.Errorf("%w: Format %q: want %s", ErrInvalid, in.Format, fileformat.Names())
	}
	if in.Compression != "" && !in.Format.Takes(in.Compression) {
		return fmt.Errorf("%w: Compression %q: %s takes %s", ErrInvalid, in.Compression, in.Format, in.Format.CodecNames())
	}
	if in.TimeZone == "" {
		return fmt.Errorf("%w: TimeZone is empty", ErrInvalid)
	}
	if len(in.Datasets) == 0 {
		return fmt.Errorf("%w: no datasets", ErrInvalid)
	}
	seen := map[string]bool{}
	for _, ds := range in.Datasets {
		if err := ds.Validate(); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		if seen[ds.Name] {
			return fmt.Errorf("%w: dataset %s listed twice", ErrInvalid, ds.Name)
		}
		seen[ds.Name] = true
	}
	return nil
}

func (in Input) maxFileBytes() int64 {
	if in.MaxFileBytes <= 0 {
		return DefaultMaxFileBytes
	}
	return in.MaxFileBytes
}

func (in Input) codec() fileformat.Codec { return in.Format.Codec(in.Compression) }

// Files returns every document of the account: one schema document per
// dataset, in the account's order, then the README last. A writer that
// stores them in this order and marks the README with Hash(files) can tell
// from the README alone whether the whole set is current.
func Files(in Input) ([]File, error) {
	if err := in.validate(); err != nil {
		return nil, err
	}
	var out []File
	for _, ds := range in.Datasets {
		b, err := Schema(ds)
		if err != nil {
			return nil, err
		}
		out = append(out, newFile(layout.ContractSchemaKey(in.Prefix, ds.ContractVersion(), ds.Name), b, ContentTypeJSON))
	}
	readme, err := README(in)
	if err != nil {
		return nil, err
	}
	return append(out, newFile(layout.ReadmeKey(in.Prefix), readme, ContentTypeMarkdown)), nil
}

func newFile(key string, body []byte, contentType string) File {
	sum := sha256.Sum256(body)
	return File{Key: key, Body: body, ContentType: contentType, SHA256: hex.EncodeToString(sum[:])}
}

// Hash is the hex SHA-256 of a set of documents: of every key and its
// body's SHA-256, in key order, so it changes when any document is added,
// removed or changed.
func Hash(files []File) string {
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b File) int { return strings.Compare(a.Key, b.Key) })
	h := sha256.New()
	for _, f := range sorted {
		fmt.Fprintf(h, "%s\n%s\n", f.Key, f.SHA256)
	}
	return hex.EncodeToString(h.Sum(nil))
}
