// Package verify checks a delivered partition against its manifest, the way
// a careful customer would: `_SUCCESS` names the manifest by SHA-256, and the
// data files under the partition are exactly the manifest's, with its sizes,
// CRC32C and row counts.
//
// Check is the entry point that needs nothing but read access to the bucket
// (a bucket, a prefix, a dataset and a day: no ledger, no account record)
// and returns a report a person can read (Result.WriteText). Partition is
// the older entry point the operator CLI and the demo call with a partition
// prefix they computed from the account.
package verify

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// API is what verification reads.
type API interface {
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	ListObjectsV2(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

var _ API = (*s3.Client)(nil)

// RowCounter counts the rows of a data file's bytes; nil skips row checks.
type RowCounter func(key string, data []byte) (int64, error)

// Report is the outcome for one partition.
type Report struct {
	Prefix     string
	Committed  bool // _SUCCESS exists
	Generation int64
	Rows       int64
	Files      int
	Problems   []string
}

// OK reports whether nothing is wrong.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// Bucket is a destination bucket and, when known, the account that must own
// it (every call names it, C1).
type Bucket struct {
	Name  string
	Owner string
}

func (b Bucket) owner() *string {
	if b.Owner == "" {
		return nil
	}
	return &b.Owner
}

// Partition verifies the partition under partitionPrefix (ending in
// `dt=YYYY-MM-DD/`). A partition without `_SUCCESS` is reported as not
// committed, which is not a problem by itself.
func Partition(ctx context.Context, api API, b Bucket, partitionPrefix string, count RowCounter) (Report, error) {
	r := Report{Prefix: partitionPrefix}
	bucket := b.Name
	keys := map[string]int64{}
	p := s3.NewListObjectsV2Paginator(api, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &partitionPrefix, ExpectedBucketOwner: b.owner()})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return r, fmt.Errorf("list %s: %w", partitionPrefix, err)
		}
		for _, o := range page.Contents {
			keys[aws.ToString(o.Key)] = aws.ToInt64(o.Size)
		}
	}
	successKey := partitionPrefix + layout.SuccessName
	if _, ok := keys[successKey]; !ok {
		return r, nil
	}
	r.Committed = true
	succBytes, err := get(ctx, api, b, successKey)
	if err != nil {
		return r, err
	}
	succ, err := manifest.DecodeSuccess(succBytes)
	if err != nil {
		r.Problems = append(r.Problems, err.Error())
		return r, nil
	}
	mb, err := get(ctx, api, b, succ.ManifestKey)
	if err != nil {
		r.Problems = append(r.Problems, fmt.Sprintf("_SUCCESS names manifest %s: %v", succ.ManifestKey, err))
		return r, nil
	}
	if !succ.Matches(mb) {
		r.Problems = append(r.Problems, "manifest SHA-256 differs from the one _SUCCESS commits")
	}
	m, err := manifest.Decode(mb)
	if err != nil {
		r.Problems = append(r.Problems, err.Error())
		return r, nil
	}
	r.Generation, r.Rows, r.Files = m.Generation, m.Totals.Rows, len(m.Files)
	if m.Generation != succ.Generation {
		r.Problems = append(r.Problems, fmt.Sprintf("_SUCCESS generation %d, manifest generation %d", succ.Generation, m.Generation))
	}
	listed := map[string]bool{}
	for _, f := range m.Files {
		listed[f.Key] = true
		size, ok := keys[f.Key]
		if !ok {
			r.Problems = append(r.Problems, fmt.Sprintf("%s: listed in the manifest but missing", f.Key))
			continue
		}
		if size != f.Bytes {
			r.Problems = append(r.Problems, fmt.Sprintf("%s: %d bytes stored, manifest says %d", f.Key, size, f.Bytes))
		}
		data, err := get(ctx, api, b, f.Key)
		if err != nil {
			return r, err
		}
		if got := CRC32C(data); got != f.CRC32C {
			r.Problems = append(r.Problems, fmt.Sprintf("%s: CRC32C %s stored, manifest says %s", f.Key, got, f.CRC32C))
		}
		if count != nil {
			n, err := count(f.Key, data)
			if err != nil {
				r.Problems = append(r.Problems, fmt.Sprintf("%s: count rows: %v", f.Key, err))
			} else if n != f.Rows {
				r.Problems = append(r.Problems, fmt.Sprintf("%s: %d rows stored, manifest says %d", f.Key, n, f.Rows))
			}
		}
	}
	var extra []string
	for k := range keys {
		if layout.IsDataKey(k) && !listed[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		r.Problems = append(r.Problems, fmt.Sprintf("%s: data file not in the manifest (orphan)", k))
	}
	return r, nil
}

// CRC32C returns the Castagnoli CRC of data as S3 shows it: base64 of the
// big-endian value.
func CRC32C(data []byte) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)))
	return base64.StdEncoding.EncodeToString(b[:])
}

func get(ctx context.Context, api API, b Bucket, key string) ([]byte, error) {
	out, err := api.GetObject(ctx, &s3.GetObjectInput{Bucket: &b.Name, Key: &key, ExpectedBucketOwner: b.owner()})
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

// Partitions lists the partition prefixes (`.../dt=YYYY-MM-DD/`) under a
// dataset prefix (`<prefix>/v1/<dataset>/`).
func Partitions(ctx context.Context, api API, b Bucket, datasetPrefix string) ([]string, error) {
	seen := map[string]bool{}
	p := s3.NewListObjectsV2Paginator(api, &s3.ListObjectsV2Input{Bucket: &b.Name, Prefix: &datasetPrefix, ExpectedBucketOwner: b.owner()})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", datasetPrefix, err)
		}
		for _, o := range page.Contents {
			rest := strings.TrimPrefix(aws.ToString(o.Key), datasetPrefix)
			if seg, _, ok := strings.Cut(rest, "/"); ok && strings.HasPrefix(seg, "dt=") {
				seen[datasetPrefix+seg+"/"] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}
