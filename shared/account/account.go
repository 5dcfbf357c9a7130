// Package account is one tenant's export configuration: which datasets, from
// which start date, in which time zone, with which settle delay, into which
// bucket (C1, C3, F1, F5, L4). It is stored by package ledger (pk=ACCOUNTS,
// sk=<id>) as the JSON document of Account; `daybook account put --file
// account.json` reads the same snake_case JSON.
//
// Account ids are `acct_` + 16 random lowercase base32 characters, never
// sequential (F2): they appear in customers' object keys.
//
// Saving an account checks it against the deployment's rules (Validate,
// validate.go) and against every other account (CheckIsolation,
// isolation.go): tenant isolation is enforced, not assumed (C4). The
// destination's role and external id are in role.go, its custom endpoint in
// endpoint.go.
package account

import (
	"cmp"
	"encoding/base32"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
)

// DefaultPrefix is the prefix template used when an account names none.
const DefaultPrefix = "daybook/" + layout.PlaceholderAccountID

// DefaultTimeZone is the time zone of an account that names none.
const DefaultTimeZone = "UTC"

// Account is one tenant.
type Account struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
	// StartDate is the backfill horizon: the first day exported.
	StartDate civil.Date `json:"start_date"`
	// TimeZone is an IANA zone; days are closed at midnight there. Default
	// DefaultTimeZone.
	TimeZone string `json:"time_zone,omitempty"`
	// SettleDelay is waited after midnight for late data (L4). Nil means the
	// deployment default (SETTLE_DELAY), applied by WithDefaults.
	SettleDelay *Duration `json:"settle_delay,omitempty"`
	// SourceShard is the shard of the deployment's sharded sources that
	// holds this tenant's rows, for platforms that shard tenants across
	// databases (one connection string per shard: source.Router); empty
	// for none. A source without shards ignores it.
	SourceShard string `json:"source_shard,omitempty"`
	// TenantKey is the tenant's own id in the source, bound to every
	// dataset's tenant column, for platforms whose tenants are not keyed
	// by the daybook account id (a uuid or bigint organisation id); empty
	// binds the account id. It must be of each enabled dataset's
	// tenant_type. Object keys and provenance still use the account id.
	TenantKey string `json:"tenant_key,omitempty"`
	// Datasets are the exported (enabled) datasets.
	Datasets    []string    `json:"datasets"`
	Destination Destination `json:"destination"`
	CreatedAt   time.Time   `json:"created_at,omitzero"`
	// Version is the stored record's version, set by the ledger when it
	// reads the account and bumped by every write; an update is written
	// only if the record still has the version it was read at. It is not
	// part of the JSON document (0: never stored, or stored before
	// versions).
	Version int64 `json:"-"`
}

// Destination is the customer's bucket and how daybook reaches it (C1, C3).
type Destination struct {
	// StoreKind is the object store: s3 (the default when empty: S3 and
	// S3-compatible stores), gcs (Google Cloud Storage) or azure (a
	// container in an Azure storage account; Bucket is the container).
	StoreKind StoreKind `json:"store,omitempty"`
	Bucket    string    `json:"bucket"`
	// StorageAccount is the Azure storage account the container is in
	// (azure only).
	StorageAccount string `json:"storage_account,omitempty"`
	Region         string `json:"region,omitempty"`
	// Prefix is a layout template ({{.AccountID}}, {{.Stage}}); default DefaultPrefix.
	Prefix string `json:"prefix,omitempty"`
	// RoleARN is assumed with ExternalID; empty means daybook's own role
	// (an explicit fallback, C1).
	RoleARN             string `json:"role_arn,omitempty"`
	ExternalID          string `json:"external_id,omitempty"`
	ExpectedBucketOwner string `json:"expected_bucket_owner,omitempty"`
	// Endpoint is an optional custom S3 endpoint URL (MinIO, R2, ...; C3).
	Endpoint string `json:"endpoint,omitempty"`
	// Format is the file format (F5); empty means fileformat.Default
	// (parquet). Compression is one of the format's codecs; empty means its
	// default (parquet: snappy or zstd, default snappy; ndjson: gzip).
	Format      fileformat.Format `json:"format,omitempty"`
	Compression fileformat.Codec  `json:"compression,omitempty"`
	// Checksums says which S3 checksum headers uploads send: full_object
	// (default: per-part CRC32C and a whole-object CRC32C that AWS S3
	// verifies), composite (per-part only), or none, for S3-compatible
	// stores that reject checksum headers (C3). The manifest always carries
	// daybook's own CRC32C.
	Checksums string `json:"checksums,omitempty"`
	// ParquetProfile is how Parquet files are encoded: "compatible" (the
	// default: version 1 data pages, PLAIN/RLE/dictionary encodings, which
	// every common reader opens) or "compact" (version 2 pages and delta
	// encodings: smaller files, for readers known to support them).
	ParquetProfile fileformat.ParquetProfile `json:"parquet_profile,omitempty"`
	// TableFormat is the open table format kept beside the folders: empty
	// (none, the default) or TableFormatIceberg, an Apache Iceberg table
	// per dataset whose data files are the folders' part files
	// (shared/icetable). It needs Parquet files and UTC days.
	TableFormat string `json:"table_format,omitempty"`
	// Encryption is how every object daybook writes is encrypted at rest
	// (the customer's KMS key, on each store its own way); nil: the
	// bucket's default.
	Encryption *Encryption `json:"encryption,omitempty"`
	// Tags are set on every object daybook writes (S3 object tags, GCS
	// object metadata, Azure blob index tags), for the customer's lifecycle
	// and retention rules to key on.
	Tags map[string]string `json:"tags,omitempty"`
	// Glue, optional with the Iceberg table format, also registers each
	// dataset's table in the AWS Glue Data Catalog of the destination's
	// account and region, through the same role, so Athena queries it by
	// name.
	Glue *GlueTables `json:"glue,omitempty"`
	// GCS and Azure are how daybook reaches a Google Cloud Storage bucket
	// or an Azure Blob Storage container: federation from its AWS identity
	// (the default) or a key in AWS Secrets Manager (credentials.go).
	GCS   *GCSAccess   `json:"gcs,omitempty"`
	Azure *AzureAccess `json:"azure,omitempty"`
}

// TableFormatIceberg is Destination.TableFormat's one table format.
const TableFormatIceberg = "iceberg"

// GlueTables is where the account's tables are registered in Glue: in
// Database, each dataset's table named TablePrefix + the dataset's name.
// The database must exist; daybook creates and updates the tables only.
type GlueTables struct {
	Database    string `json:"database"`
	TablePrefix string `json:"table_prefix,omitempty"`
}

// TableName is the Glue table of dataset ds.
func (g GlueTables) TableName(ds string) string { return g.TablePrefix + ds }

// Checksum modes of Destination.Checksums.
const (
	ChecksumsFullObject = "full_object"
	ChecksumsComposite  = "composite"
	ChecksumsNone       = "none"
)

// Duration is a time.Duration written as "2h", "90m" in JSON.
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalText renders a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText parses a Go duration string ("2h", "30m"); the error names it.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("duration %q: %w", string(b), err)
	}
	*d = Duration(v)
	return nil
}

// NewID returns `acct_` + 16 lowercase base32 characters (80 random bits) from r.
func NewID(r io.Reader) (string, error) {
	var b [10]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("account id: %w", err)
	}
	return "acct_" + strings.ToLower(base32.StdEncoding.EncodeToString(b[:])), nil
}

var idRE = regexp.MustCompile(`^acct_[a-z2-7]{16}$`)

// ValidID reports whether id has the NewID shape.
func ValidID(id string) bool { return idRE.MatchString(id) }

// WithDefaults returns a copy with TimeZone (DefaultTimeZone), SettleDelay
// (settle), Prefix (DefaultPrefix), Format (fileformat.Default) and
// Compression (the format's default codec) filled in where empty.
func (a Account) WithDefaults(settle time.Duration) Account {
	a.TimeZone = cmp.Or(a.TimeZone, DefaultTimeZone)
	if a.SettleDelay == nil {
		d := Duration(settle)
		a.SettleDelay = &d
	}
	d := &a.Destination
	d.Prefix = cmp.Or(d.Prefix, DefaultPrefix)
	d.Format = cmp.Or(d.Format, fileformat.Default)
	d.Compression = cmp.Or(d.Compression, d.Format.DefaultCodec())
	a.Datasets = append([]string(nil), a.Datasets...)
	return a
}

// FileFormat returns the format the destination's files are written in:
// Format, or fileformat.Default when it is empty. An unknown format is an
// error naming it.
func (d Destination) FileFormat() (fileformat.Format, error) {
	return fileformat.Parse(string(cmp.Or(d.Format, fileformat.Default)))
}

// Location returns the account's time zone (DefaultTimeZone when unset).
func (a Account) Location() (*time.Location, error) {
	loc, err := time.LoadLocation(cmp.Or(a.TimeZone, DefaultTimeZone))
	if err != nil {
		return nil, fmt.Errorf("account %s time_zone %q: %w", a.ID, a.TimeZone, err)
	}
	return loc, nil
}

func (a Account) settle() time.Duration {
	if a.SettleDelay == nil {
		return 0
	}
	return a.SettleDelay.D()
}

// ClosedThrough returns the last closed day at now: the latest day whose end
// (midnight after it, in the account's zone) plus the settle delay is at or
// before now (L4). Today is never closed. An invalid zone falls back to UTC;
// Validate rejects it earlier.
func (a Account) ClosedThrough(now time.Time) civil.Date {
	loc, err := a.Location()
	if err != nil {
		loc = time.UTC
	}
	d := civil.In(now, loc) // today: never closed
	for {
		d = d.AddDays(-1)
		_, end := window(d, loc)
		if !end.Add(a.settle()).After(now) {
			return d
		}
	}
}

// Window returns the instants the day covers in the account's zone, [start,
// end): 24 hours, or 23/25 on DST change days.
func (a Account) Window(day civil.Date) (start, end time.Time) {
	loc, err := a.Location()
	if err != nil {
		loc = time.UTC
	}
	return window(day, loc)
}

func window(day civil.Date, loc *time.Location) (time.Time, time.Time) {
	return day.Start(loc), day.AddDays(1).Start(loc)
}

// Vars returns the prefix template values for this account.
func (a Account) Vars(stage string) layout.Vars {
	return layout.Vars{AccountID: a.ID, Stage: stage}
}

// Prefix renders the destination prefix for stage.
func (a Account) Prefix(stage string) (string, error) {
	return layout.RenderPrefix(cmp.Or(a.Destination.Prefix, DefaultPrefix), a.Vars(stage))
}
