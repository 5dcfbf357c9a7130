package main

import (
	"context"
	"fmt"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/encode"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/upload"
)

// dataFile is one data file: the encoder writing into the upload.
type dataFile struct {
	key string
	w   *upload.Writer
	enc encode.Writer
}

// fileSpec is how every data file of a run is written: its upload's
// options, its format, the dataset whose columns it holds and the
// encoder's options.
type fileSpec struct {
	upload  upload.Options
	format  fileformat.Format
	dataset dataset.Dataset
	encode  encode.Options
}

// openFile starts the data file at key of pending, written as spec says.
func openFile(ctx context.Context, pending *Pending, key string, spec fileSpec) (*dataFile, error) {
	w := pending.NewDataFile(ctx, key, spec.upload)
	enc, err := encode.New(spec.format, w, spec.dataset, spec.encode)
	if err != nil {
		return nil, err
	}
	return &dataFile{key: key, w: w, enc: enc}, nil
}

// close flushes the encoder and commits the file's upload.
func (f *dataFile) close() (manifest.File, error) {
	if err := f.enc.Close(); err != nil {
		return manifest.File{}, fmt.Errorf("%s: %w", f.key, err)
	}
	if err := f.w.Close(); err != nil {
		return manifest.File{}, fmt.Errorf("%s: %w", f.key, err)
	}
	r := f.w.Result()
	return manifest.File{Key: f.key, Rows: f.enc.Rows(), Bytes: r.Bytes, CRC32C: r.CRC32C, SHA256: r.SHA256}, nil
}
