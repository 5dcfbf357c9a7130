package icetable

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// A data file's column statistics come from its Parquet footer, read with
// one request for the file's last footerProbe bytes (a second one when the
// footer is larger), never the whole file.
const (
	footerProbe    = 64 << 10
	maxFooterBytes = 16 << 20
)

// errNotParquet is a data file whose last bytes are not a Parquet footer.
var errNotParquet = errors.New("not a Parquet file (no PAR1 footer)")

// errDataFile is a delivered data file that cannot be listed in the table
// (its footer unreadable): a failure of the table commit, not of the table.
var errDataFile = errors.New("icetable: a delivered data file")

// dataFile is f as the table lists it, in day's partition, with the column
// statistics the library builds from its Parquet footer (value, null
// counts and lower and upper bounds per column, by the table's metrics
// mode), so an engine skips the files a filter leaves out. sc is the
// table's schema as the table commit leaves it.
func (t *Table) dataFile(ctx context.Context, tbl *table.Table, sc *iceberg.Schema, day civil.Date, f manifest.File) (iceberg.DataFile, error) {
	meta, err := t.footer(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("%w %s: read its footer: %w", errDataFile, f.Key, err)
	}
	df, err := table.DataFileFromMetadata(table.DataFileArgs{
		Schema: sc, Spec: tbl.Spec(), Format: iceberg.ParquetFile, Metadata: meta,
		FilePath: uri(t.Store, f.Key), FileSize: f.Bytes, Content: iceberg.EntryContentData,
		PartitionValues: map[int]any{partitionFieldID: iceberg.Date(day.EpochDays())},
		Properties:      tbl.Properties(), FormatVersion: tbl.Metadata().Version(),
	})
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", errDataFile, f.Key, err)
	}
	if df.Count() != f.Rows {
		return nil, fmt.Errorf("%w %s: its footer counts %d rows, the manifest %d", errDataFile, f.Key, df.Count(), f.Rows)
	}
	return df, nil
}

// footer reads and decodes f's Parquet footer: <footer> <4-byte length> PAR1.
func (t *Table) footer(ctx context.Context, f manifest.File) (*metadata.FileMetaData, error) {
	tail, err := t.Store.GetTail(ctx, f.Key, min(f.Bytes, footerProbe))
	if err != nil {
		return nil, err
	}
	if len(tail) < 8 || !bytes.Equal(tail[len(tail)-4:], []byte("PAR1")) {
		return nil, errNotParquet
	}
	n := int64(binary.LittleEndian.Uint32(tail[len(tail)-8:]))
	if n+8 > f.Bytes || n > maxFooterBytes {
		return nil, fmt.Errorf("%w: a footer of %d bytes in a file of %d", errNotParquet, n, f.Bytes)
	}
	if n+8 > int64(len(tail)) {
		if tail, err = t.Store.GetTail(ctx, f.Key, n+8); err != nil {
			return nil, err
		}
	}
	return metadata.NewFileMetaData(tail[int64(len(tail))-8-n:len(tail)-8], nil)
}
