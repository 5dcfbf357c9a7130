// Package encode turns rows of the dataset value model into delivery files
// (F5) of the formats package fileformat names: Parquet (snappy or zstd)
// and gzipped NDJSON. Encoders stream to an io.Writer and keep at most one
// row group in memory (E2), so the same code serves a 10-row and a
// 100-million-row day.
//
// Parquet files are written in one of two profiles (Options.Profile). The
// default, ProfileCompatible, uses only version 1 data pages and the PLAIN,
// RLE and RLE_DICTIONARY encodings, which every reader a customer may load
// the files with decodes. ProfileCompact adds version 2 data pages and delta
// encodings for smaller files, for readers known to support them. Both
// profiles write the same physical and logical types.
package encode

import (
	"errors"
	"fmt"
	"io"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// Defaults bounding a Parquet row group. A row group is buffered in memory
// (compressed pages) until it is flushed, so these two numbers bound the
// encoder's memory whatever the size of the day.
const (
	DefaultMaxRowGroupRows  = 128 * 1024
	DefaultMaxRowGroupBytes = 64 << 20
)

// Options tune an encoder. The zero value is the recommended setting.
type Options struct {
	// Compression is the Parquet codec; empty means the format's default
	// (fileformat.Parquet.DefaultCodec). Ignored for NDJSON, which is always
	// gzip.
	Compression fileformat.Codec
	// MaxRowGroupRows ends a row group after that many rows (0: default).
	MaxRowGroupRows int64
	// MaxRowGroupBytes ends a row group once its buffered size estimate
	// passes this (0: default).
	MaxRowGroupBytes int64
	// Profile chooses the Parquet page version and encodings (see Profile);
	// the zero value is ProfileCompatible. Ignored for NDJSON.
	Profile Profile
	// GzipLevel is the NDJSON gzip level (0: default, 6).
	GzipLevel int
	// Workers is how many goroutines encode a Parquet row group's columns
	// side by side, the caller's among them: 0 or 1 encodes every column
	// on the caller's. The file's bytes are the same for any value. Ignored
	// for NDJSON.
	Workers int
	// Assist, when set with Workers above 1, offers each segment's
	// columns to goroutines that call its Help while they wait for the
	// encoder (see Assist). The file's bytes are the same. Ignored for
	// NDJSON.
	Assist *Assist

	// tuning is set only by this package's tests (export_test.go), so a
	// small file exercises what only a large one would otherwise.
	tuning tuning
}

// tuning overrides Parquet writer limits; zero fields mean the defaults.
type tuning struct {
	dictionaryLimit int64  // DictionaryLimit
	pageBytes       int    // parquet-go's page buffer size
	everySizeCheck  bool   // make every size check (none skipped: see segmentEnd)
	segmentOpen     func() // called once a segment is offered to Options.Assist
}

var (
	// ErrUnsupported is returned for an unknown format or codec.
	ErrUnsupported = errors.New("unsupported")
	// ErrClosed is returned by Write or Flush after Close.
	ErrClosed = errors.New("encoder closed")
)

// Writer encodes rows of one dataset into one file.
type Writer interface {
	// WriteBatch appends every row of b, whose columns must be the
	// dataset's. The values are trusted to be valid for their columns (the
	// source checked them). The encoder keeps no reference to b or its
	// slices after WriteBatch returns, so the caller reuses the batch.
	WriteBatch(b *dataset.Batch) error
	// Write appends one row in the dataset value model (see
	// dataset.Dataset.Coerce), checking its types. The encoder keeps no
	// reference to row or its values after Write returns; it gathers rows
	// into a batch of its own, encoded when full or at Flush or Close.
	Write(row []any) error
	// Flush ends the current row group (Parquet) or flushes the gzip stream
	// (NDJSON), so every row written so far is in the underlying writer; the
	// caller checks its byte count to decide when to roll to a new file.
	Flush() error
	// Close writes the footer (Parquet) or gzip trailer. It does not close
	// the underlying writer. A writer closed with no rows still produces a
	// valid file with the full schema (E6).
	Close() error
	// Rows returns the number of rows written.
	Rows() int64
}

// New returns an encoder of format writing to w.
func New(format fileformat.Format, w io.Writer, ds dataset.Dataset, opts Options) (Writer, error) {
	if len(ds.Columns) == 0 {
		return nil, fmt.Errorf("encode dataset %q: no columns", ds.Name)
	}
	switch format {
	case fileformat.Parquet:
		return newParquet(w, ds, opts)
	case fileformat.NDJSON:
		return newNDJSON(w, ds, opts)
	}
	return nil, fmt.Errorf("encode dataset %s: format %q: %w", ds.Name, format, ErrUnsupported)
}

// rowBufferRows is the size of the batch Write gathers rows into.
const rowBufferRows = 256

// rowBuffer gathers the rows of Write into a batch, so rows written one at
// a time take the same encoding path as batches.
type rowBuffer struct {
	ds    dataset.Dataset
	batch *dataset.Batch
}

// add appends row, the one after the written rows, and reports whether the
// batch is full.
func (r *rowBuffer) add(row []any, written int64) (full bool, err error) {
	if r.batch == nil {
		r.batch = dataset.NewBatch(r.ds, rowBufferRows)
	}
	if r.batch.Len() == 0 {
		r.batch.Reset(written + 1)
	}
	if err := r.batch.AppendRow(row); err != nil {
		return false, err
	}
	return r.batch.Len() >= rowBufferRows, nil
}

// flush hands the gathered rows, if any, to write and empties the buffer.
func (r *rowBuffer) flush(write func(*dataset.Batch) error) error {
	if r.pending() == 0 {
		return nil
	}
	defer r.batch.Reset(0) // add sets the first row number
	return write(r.batch)
}

func (r *rowBuffer) pending() int {
	if r.batch == nil {
		return 0
	}
	return r.batch.Len()
}

// checkBatch refuses a batch of another dataset's columns.
func checkBatch(ds dataset.Dataset, b *dataset.Batch) error {
	if len(b.Cols) != len(ds.Columns) {
		return fmt.Errorf("encode dataset %s: batch of %d columns, want %d", ds.Name, len(b.Cols), len(ds.Columns))
	}
	for i, c := range ds.Columns {
		if got := b.Cols[i].Column; got.Name != c.Name || got.Type != c.Type || got.Nullable != c.Nullable {
			return fmt.Errorf("encode dataset %s: batch column %d is %s %s, want %s %s", ds.Name, i, got.Name, got.Type, c.Name, c.Type)
		}
	}
	return nil
}
