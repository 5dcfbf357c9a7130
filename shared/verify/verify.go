// Package verify checks a delivered partition against its manifest, the way
// a careful customer would, with nothing but read access to the bucket: a
// bucket, a prefix, a dataset and a day (no ledger, no account record).
// `_SUCCESS` names the manifest by SHA-256, and the data files under the
// partition are exactly the manifest's, with its sizes, CRC32C, SHA-256 and
// row counts (how much is read is [Options]').
//
// [Check] verifies one partition and returns a report a person can read
// ([Result.WriteText]); [Days] lists the days a dataset has partitions for.
package verify

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"regexp"
	"sort"
	"strings"

	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/layout"
)

// Reader is every read this package makes of a bucket, on any store
// (*bucket.Bucket has them): reads only, so read access to the bucket is
// enough (on S3: s3:ListBucket on the prefix, s3:GetObject under it; on
// GCS: storage.objects.list and get; on Azure: Storage Blob Data Reader).
// On S3 the expected bucket owner is the Bucket's.
type Reader interface {
	// URI names a key as the store's readers do.
	URI(key string) string
	Get(ctx context.Context, key string, limit int64) ([]byte, error)
	GetRange(ctx context.Context, key string, off, n int64) ([]byte, error)
	Head(ctx context.Context, key string) (bucket.Info, error)
	// List lists at most limit objects under prefix (more is
	// bucket.ErrTooMany).
	List(ctx context.Context, prefix string, limit int) ([]bucket.Object, error)
	// Dirs lists at most limit folders under prefix (more is
	// bucket.ErrTooMany).
	Dirs(ctx context.Context, prefix string, limit int) ([]string, error)
}

// MaxFolders is the most folders verify lists under one prefix: a dataset's
// day folders (a hundred thousand days is 270 years) or a prefix's contract
// and dataset folders. A bucket holding more was planted, and verify refuses
// it rather than hold the listing.
const MaxFolders = 100_000

// MaxPartitionObjects is the most objects verify lists in one partition's
// folder: a day's files of every slice and part hold far fewer.
const MaxPartitionObjects = 100_000

var _ Reader = (*bucket.Bucket)(nil)

// Target is one partition, named the way a customer knows it: from the
// bucket alone, with no ledger and no account record.
type Target struct {
	Bucket string
	// Prefix is the part of every key before `/v1/` (the account's
	// rendered prefix).
	Prefix string
	// Dataset is the dataset's name, or `<name>.<contract>` for its folder
	// under a later contract than v1 (`events.v2` is `<prefix>/v2/events/`);
	// a bare name is the v1 folder, whatever the catalog says now.
	Dataset string
	Day     civil.Date
}

// name is the target's dataset name, without its contract.
func (t Target) name() string {
	n, _ := dataset.SplitLedgerName(t.Dataset)
	return n
}

// tree is `<name>.<contract>`, the contract always explicit (v1 for a bare
// name), for the layout functions.
func (t Target) tree() string {
	n, c := dataset.SplitLedgerName(t.Dataset)
	if c == "" {
		c = layout.Version
	}
	return n + "." + c
}

// PartitionPrefix is the key prefix of the target's partition.
func (t Target) PartitionPrefix() string { return layout.PartitionPrefix(t.Prefix, t.tree(), t.Day) }

var (
	datasetNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.v[1-9][0-9]{0,2})?$`)
	contractDirRE = regexp.MustCompile(`^v[1-9][0-9]{0,2}$`)
)

// validateDataset checks everything but the day.
func (t Target) validateDataset() error {
	switch {
	case t.Bucket == "":
		return errors.New("verify: bucket is empty")
	case !datasetNameRE.MatchString(t.Dataset):
		return fmt.Errorf("verify: dataset %q is not a dataset name", t.Dataset)
	}
	if err := layout.ValidateRendered(t.Prefix); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	return nil
}

func (t Target) validate() error {
	if err := t.validateDataset(); err != nil {
		return err
	}
	if t.Day.IsZero() {
		return errors.New("verify: day is not set")
	}
	return nil
}

// Options tunes how much Check reads.
type Options struct {
	// LatestOnlyBefore, set by a caller that knows from the catalog that
	// the dataset is a snapshot, is the account's newest closed day: a
	// snapshot's copy is taken for that day only, so a day before it with
	// no _SUCCESS is StatusLatestOnly, unless the day's delivery manifest
	// lists the dataset missing (its copy was taken when the day was the
	// newest, and failed). A customer without the catalog relies on the
	// delivery manifest alone.
	LatestOnlyBefore civil.Date
	// Download reads every data file in full: its CRC32C and SHA-256 are
	// recomputed from the bytes and its rows are counted, whatever its
	// format. Without it, a file's CRC32C is the one the store keeps for
	// the object when that is a whole-object CRC32C (one HEAD), and the
	// file is read in full only when the store has none (Azure never has);
	// rows are counted from Parquet
	// footers (two ranged reads) and, for gzipped NDJSON, only in files
	// read in full anyway.
	Download bool
	// CountRows, when set, counts the rows of each data file instead of
	// the package's CountRows, and implies Download: a caller that reads
	// every row (a test comparing them with the source) reads the bytes
	// Check downloaded.
	CountRows RowCounter
}

// RowCounter counts the rows of a data file from its key and bytes.
type RowCounter func(key string, data []byte) (int64, error)

// CRC32C returns the Castagnoli CRC of data as S3 shows it: base64 of the
// big-endian value.
func CRC32C(data []byte) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)))
	return base64.StdEncoding.EncodeToString(b[:])
}

// Days lists, sorted, the days t.Dataset has a partition folder
// (`dt=YYYY-MM-DD/`) for under t.Prefix, whether committed or not (t.Day is
// not used), and the folders named `dt=` that are not a day. An error
// means the bucket could not be listed.
func Days(ctx context.Context, r Reader, t Target) (days []civil.Date, strays []string, err error) {
	if err := t.validateDataset(); err != nil {
		return nil, nil, err
	}
	dp := layout.DatasetPrefix(t.Prefix, t.tree())
	dirs, err := r.Dirs(ctx, dp, MaxFolders)
	if err != nil {
		return nil, nil, err
	}
	for _, seg := range dirs {
		if !strings.HasPrefix(seg, "dt=") {
			continue
		}
		d, err := civil.Parse(strings.TrimPrefix(seg, "dt="))
		if err != nil || layout.PartitionPrefix(t.Prefix, t.tree(), d) != dp+seg+"/" {
			strays = append(strays, dp+seg+"/")
			continue
		}
		days = append(days, d)
	}
	sort.Slice(days, func(i, j int) bool { return days[i].Before(days[j]) })
	sort.Strings(strays)
	return days, strays, nil
}

// Datasets lists, sorted, the dataset folders under every contract of
// t.Prefix (`<prefix>/v1/<dataset>/`, `<prefix>/v2/<dataset>/`, ...), as
// Target.Dataset names them (`events`, `events.v2`), leaving out daybook's
// own folders (`_manifests`, `_schemas`, ...); t.Dataset and t.Day are not
// used.
func Datasets(ctx context.Context, r Reader, t Target) ([]string, error) {
	if t.Bucket == "" {
		return nil, errors.New("verify: bucket is empty")
	}
	if err := layout.ValidateRendered(t.Prefix); err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	roots, err := r.Dirs(ctx, strings.TrimSuffix(t.Prefix, "/")+"/", MaxFolders)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, c := range roots {
		if !contractDirRE.MatchString(c) {
			continue
		}
		dirs, err := r.Dirs(ctx, layout.ContractRoot(t.Prefix, c), MaxFolders)
		if err != nil {
			return nil, err
		}
		for _, name := range dirs {
			if name = dataset.LedgerName(name, c); datasetNameRE.MatchString(name) {
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	return names, nil
}
