package main

import (
	"context"
	"fmt"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/encode"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/source"
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

// writeData streams q's rows through the encoder into the generation's
// data files of slice (wholeDay: of the day), named g.dataKey(slice, 0),
// (slice, 1), ..., rolling to the next file past MaxFileBytes. The day
// written whole and slice 0 get one valid zero-row file when q has no
// rows. On error the file being written is left to Pending.Abort.
//
// The files are written into the generation begun (generation.begun) when
// the first file is opened, once the source has handed over its first
// batch or ended without a row, and not at all when the source fails
// before.
func (g *generation) writeData(ctx context.Context, q source.Query, slice int) ([]manifest.File, source.Provenance, error) {
	e := g.e
	var (
		files []manifest.File
		cur   *dataFile
	)
	maxFile := e.Config.maxFileBytes()
	depth, opts := e.Config.pipelineDepth(), g.encode
	if depth > 0 && opts.Workers > 1 && g.format == fileformat.Parquet {
		opts.Assist = encode.NewAssist() // the reader helps the files' encoders in turn
	}
	open := func() error {
		p, err := g.begun(ctx)
		if err != nil {
			return err
		}
		f, err := openFile(ctx, p, g.dataKey(slice, len(files)), fileSpec{upload: g.upload, format: g.format, dataset: g.Dataset, encode: opts})
		cur = f
		return err
	}
	closeCur := func() error {
		f, err := cur.close()
		cur = nil
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	}
	// A batch is written in chunks of at most step rows, and the file
	// rolls between chunks: past MaxFileBytes by at most one chunk's row
	// groups.
	step := rollCheckRows
	if n := e.Config.RowGroupRows; n > 0 && n < int64(step) {
		step = int(n)
	}
	var chunk dataset.Batch
	write := func(b *dataset.Batch) error {
		for lo := 0; lo < b.Len(); lo += step {
			if cur == nil {
				if err := open(); err != nil {
					return err
				}
			}
			if err := cur.enc.WriteBatch(b.View(lo, min(lo+step, b.Len()), &chunk)); err != nil {
				return err
			}
			if cur.w.Written() >= maxFile {
				if err := closeCur(); err != nil {
					return err
				}
			}
		}
		return nil
	}
	var (
		prov source.Provenance
		err  error
	)
	if depth > 0 {
		var help func() bool
		if opts.Assist != nil {
			help = opts.Assist.Help
		}
		p := startPipeline(q.Dataset, depth, write, help)
		prov, err = e.Source.Batches(ctx, q, p.feed)
		err = p.close(err)
	} else {
		prov, err = e.Source.Batches(ctx, q, write)
	}
	if err == nil && len(files) == 0 && cur == nil && slice <= 0 {
		err = open()
	}
	if err == nil && cur != nil {
		err = closeCur()
	}
	if err != nil {
		return nil, prov, fmt.Errorf("write data: %w", err)
	}
	return files, prov, nil
}
