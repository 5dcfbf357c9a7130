package verify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

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
			crcFrom = "as stored by " + c.store()
			if stored != f.CRC32C {
				bad = append(bad, fmt.Sprintf("CRC32C %s stored by %s, the manifest says %s", stored, c.store(), f.CRC32C))
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

// store names the store by its URIs' scheme.
func (c *checker) store() string {
	switch scheme, _, _ := strings.Cut(c.b.URI(""), "://"); scheme {
	case "gs":
		return "GCS"
	case "abfss", "az":
		return "Azure"
	}
	return "S3"
}

// storedCRC returns the whole-object CRC32C the store keeps for key, or
// "" when it keeps none (or only a composite of the parts, which the
// manifest's whole-file CRC32C cannot be compared with; or, on Azure, an
// MD5).
func (c *checker) storedCRC(key string) (string, error) {
	info, err := c.b.Head(c.ctx, key)
	if err != nil {
		return "", err
	}
	return info.CRC32C, nil
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
	b, err := r.c.b.GetRange(r.ctx, r.key, off, int64(len(p)))
	if err != nil {
		return 0, err
	}
	n := copy(p, b)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
