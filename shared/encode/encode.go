// Package encode turns rows of the dataset value model into delivery files
// (SPEC F5) of the formats package fileformat names: Parquet (snappy or zstd)
// and gzipped NDJSON. Encoders stream to an io.Writer and keep at most one
// row group in memory (E2), so the same code serves a 10-row and a
// 100-million-row day.
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
	// DisableDictionary turns off dictionary encoding of columns declared
	// low-cardinality, and DisableDelta turns off DELTA_BINARY_PACKED for
	// timestamps. Both exist to measure what the encodings buy.
	DisableDictionary bool
	DisableDelta      bool
	// GzipLevel is the NDJSON gzip level (0: default, 6).
	GzipLevel int
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
