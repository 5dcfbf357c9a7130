// Package encode turns rows of the dataset value model into delivery files
// (SPEC F5) of the formats package fileformat names: Parquet (snappy or zstd)
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

	// tuning is set only by this package's tests (export_test.go), so a
	// small file exercises what only a large one would otherwise.
	tuning tuning
}

// tuning overrides Parquet writer limits; zero fields mean the defaults.
type tuning struct {
	dictionaryLimit int64 // DictionaryLimit
	pageBytes       int   // parquet-go's page buffer size
}

var (
	// ErrUnsupported is returned for an unknown format or codec.
	ErrUnsupported = errors.New("unsupported")
	// ErrClosed is returned by Write or Flush after Close.
	ErrClosed = errors.New("encoder closed")
)

// Writer encodes rows of one dataset into one file.
type Writer interface {
	// Write appends one row in the dataset value model (see
	// dataset.Dataset.Coerce). The encoder keeps no reference to row or its
	// values after Write returns.
	Write(row []any) error
	// Flush ends the current row group (Parquet) or flushes the gzip stream
	// (NDJSON), so every row written so far is in the underlying writer; the
	// caller checks its byte count to decide when to roll to a new file.
	Flush() error
	// Close writes the footer (Parquet) or gzip trailer. It does not close
	// the underlying writer. A writer closed with no rows still produces a
	// valid file with the full schema (SPEC E6).
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

// mismatch reports a value that is not of the dataset value model type.
func mismatch(ds dataset.Dataset, row int64, col int, v any, reason string) error {
	return &dataset.RowError{Dataset: ds.Name, Row: row, Column: ds.Columns[col].Name, Value: v, Reason: reason}
}
