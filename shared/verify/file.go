package verify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/parquet-go/parquet-go"

	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// footerReadSize is the tail read in one ranged GET to find a Parquet
// footer; a larger footer costs one more ranged GET.
const footerReadSize = 64 << 10

// file checks one data file of the manifest: present, its size, its
// CRC32C and, where cheap, its rows.
func (c *checker) file(f manifest.File) error {
	name := strings.TrimPrefix(f.Key, c.pp)
	if !strings.HasPrefix(f.Key, c.pp) || !layout.IsDataKey(f.Key) || strings.Contains(name, "/") {
		c.r.add(LevelProblem, f.Key, "the manifest lists a key that is not a data file of this partition")
		return nil
	}
	size, ok := c.keys[f.Key]
	switch {
	case !ok:
		c.r.add(LevelProblem, name, "listed in the manifest but missing")
		return nil
	case size != f.Bytes:
		c.r.add(LevelProblem, name, "%d bytes stored, the manifest says %d", size, f.Bytes)
		return nil
	}
	var (
		bad, good []string
		data      []byte
		crcFrom   string
	)
	if !c.o.Download {
		stored, err := c.storedCRC(f.Key)
		if err != nil {
			return err
		}
		if stored != "" {
			crcFrom = "as stored by S3"
			if stored != f.CRC32C {
				bad = append(bad, fmt.Sprintf("CRC32C %s stored by S3, the manifest says %s", stored, f.CRC32C))
			}
		}
	}
	if crcFrom == "" {
		b, found, err := c.get(f.Key, size) // the size listed, which is the manifest's
		if err != nil {
			return err
		}
		if !found {
			c.r.add(LevelProblem, name, "listed, then gone when read: the partition is being written again")
			return nil
		}
		data, crcFrom = b, "recomputed from the bytes"
		if got := CRC32C(data); got != f.CRC32C {
			bad = append(bad, fmt.Sprintf("CRC32C %s recomputed from the bytes, the manifest says %s", got, f.CRC32C))
		}
	}
	good = append(good, fmt.Sprintf("%d bytes", f.Bytes), "CRC32C "+f.CRC32C+" ("+crcFrom+")")
	if data != nil {
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != f.SHA256 {
			bad = append(bad, fmt.Sprintf("SHA-256 %s recomputed from the bytes, the manifest says %q", got, f.SHA256))
		} else {
			good = append(good, "SHA-256 (recomputed from the bytes)")
		}
	}
	rows, how, err := c.rows(f.Key, size, data)
	switch {
	case err != nil:
		bad = append(bad, "rows: "+err.Error())
	case how == "":
		good = append(good, "rows not counted (gzipped NDJSON is counted only when downloaded)")
	case rows != f.Rows:
		bad = append(bad, fmt.Sprintf("%d rows (%s), the manifest says %d", rows, how, f.Rows))
	default:
		good = append(good, fmt.Sprintf("%d rows (%s)", rows, how))
	}
	if len(bad) > 0 {
		c.r.add(LevelProblem, name, "%s", strings.Join(bad, "; "))
		return nil
	}
	c.r.add(LevelOK, name, "%s", strings.Join(good, "; "))
	return nil
}

// storedCRC returns the whole-object CRC32C S3 keeps for key, or "" when
// it keeps none (or only a composite of the parts, which the manifest's
// whole-file CRC32C cannot be compared with).
func (c *checker) storedCRC(key string) (string, error) {
	out, err := c.api.HeadObject(c.ctx, &s3.HeadObjectInput{Bucket: &c.t.Bucket, Key: &key,
		ExpectedBucketOwner: c.t.owner(), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		return "", fmt.Errorf("head s3://%s/%s: %w", c.t.Bucket, key, err)
	}
	sum := aws.ToString(out.ChecksumCRC32C)
	if sum == "" || out.ChecksumType == types.ChecksumTypeComposite || strings.Contains(sum, "-") {
		return "", nil
	}
	return sum, nil
}

// rows counts a data file's rows from data when it was read, otherwise
// from its Parquet footer; how says which ("" when not counted).
func (c *checker) rows(key string, size int64, data []byte) (n int64, how string, err error) {
	if data != nil {
		count := c.o.CountRows
		if count == nil {
			count = CountRows
		}
		n, err := count(key, data)
		return n, "counted in the file", err
	}
	if format, _ := fileformat.ByExtension(key); format != fileformat.Parquet {
		return 0, "", nil
	}
	r := &rangeReader{ctx: c.ctx, c: c, key: key}
	f, err := parquet.OpenFile(r, size, parquet.OptimisticRead(true), parquet.ReadBufferSize(int(min(size, footerReadSize))),
		parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return 0, "", err
	}
	return f.NumRows(), "Parquet footer", nil
}

// rangeReader reads an object with ranged GETs.
type rangeReader struct {
	ctx context.Context
	c   *checker
	key string
}

func (r *rangeReader) ReadAt(p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	rng := fmt.Sprintf("bytes=%d-%d", off, off+int64(len(p))-1)
	out, err := r.c.api.GetObject(r.ctx, &s3.GetObjectInput{Bucket: &r.c.t.Bucket, Key: &r.key, Range: &rng, ExpectedBucketOwner: r.c.t.owner()})
	if err != nil {
		return 0, fmt.Errorf("get s3://%s/%s %s: %w", r.c.t.Bucket, r.key, rng, err)
	}
	defer out.Body.Close()
	if off > 0 && aws.ToString(out.ContentRange) == "" {
		// A store that ignores Range sends the object from its start.
		return 0, fmt.Errorf("get s3://%s/%s %s: the store ignored the range", r.c.t.Bucket, r.key, rng)
	}
	n, err := io.ReadFull(out.Body, p)
	if err == io.ErrUnexpectedEOF {
		err = io.EOF
	}
	return n, err
}
