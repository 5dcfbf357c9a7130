package main

import (
	"errors"
	"runtime"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/source"
)

// pipeline hands the source's batches to write on a goroutine of its own,
// so that reading and decoding the next batch (the source's goroutine)
// overlaps encoding and compressing the one before (write's; the upload's
// goroutines hash the parts). Memory stays bounded: depth batches of the
// source's size circulate between the two, and a reader that gets ahead
// helps encode them (help) and then waits for one to come back.
// write sees every batch in the source's order, so the files are the bytes
// the one-goroutine path writes (TestExportBytesAcrossArchitectures).
type pipeline struct {
	free   chan *dataset.Batch // empty batches the reader swaps rows into
	full   chan *dataset.Batch // batches for write, in order
	failed chan struct{}       // closed once write failed
	help   func() bool         // the encoder's encode.Assist.Help, or nil
	done   chan struct{}       // closed when write has seen every batch
	err    error               // write's first error; read after failed or done
}

// errPipelineStopped stops the source's read once write has failed; the
// export reports write's error instead.
var errPipelineStopped = errors.New("the encoder stopped")

// pipelineDepth is how many batches a pipeline holds besides the source's
// own when the process may use more than one CPU, and 0 (no pipeline: the
// batches are written on the reading goroutine, as a pipeline could only
// add hand-offs) when it may use one. Go sets GOMAXPROCS from the CPUs the
// function may use (a Lambda's grow with its memory).
func pipelineDepth() int {
	if runtime.GOMAXPROCS(0) < 2 {
		return 0
	}
	return 2
}

// encodeWorkers is how many goroutines encode a Parquet file's columns
// (encode.Options.Workers): one when the export reads and encodes on one
// goroutine, else one for each CPU the process may use, at least two. The
// reading goroutine takes a share of the CPUs too; the scheduler spreads
// the three goroutines of a two-CPU run over both.
func (c ExportConfig) encodeWorkers() int {
	if c.pipelineDepth() == 0 {
		return 1
	}
	return max(2, runtime.GOMAXPROCS(0))
}

// startPipeline starts write's goroutine with depth empty batches of ds.
// help, when not nil, is called by a reader that finds no empty batch
// before it waits for one (see feed).
func startPipeline(ds dataset.Dataset, depth int, write func(*dataset.Batch) error, help func() bool) *pipeline {
	p := &pipeline{
		free: make(chan *dataset.Batch, depth), full: make(chan *dataset.Batch, depth),
		failed: make(chan struct{}), done: make(chan struct{}), help: help,
	}
	for range depth {
		p.free <- dataset.NewBatch(ds, source.BatchRows)
	}
	go func() {
		defer close(p.done)
		for b := range p.full {
			if p.err == nil {
				if p.err = write(b); p.err != nil {
					close(p.failed)
				}
			}
			b.Reset(1)
			p.free <- b
		}
	}()
	return p
}

// feed is the source's batch callback: it takes b's rows for write and
// leaves the source an empty batch, waiting while depth batches are ahead.
// Before it waits it helps encode the batches ahead (p.help) for as long as
// the encoder has columns to give.
func (p *pipeline) feed(b *dataset.Batch) error {
	var spare *dataset.Batch
	for helping := p.help != nil; spare == nil; {
		if !helping {
			select {
			case spare = <-p.free:
			case <-p.failed:
				return errPipelineStopped
			}
			break
		}
		select {
		case spare = <-p.free:
		case <-p.failed:
			return errPipelineStopped
		default:
			helping = p.help() // false: nothing to take, so wait
		}
	}
	b.Swap(spare)
	// full holds depth batches, and only depth circulate: never blocks.
	p.full <- spare
	return nil
}

// close waits until write has seen every batch fed and returns its error.
// readErr is the source's: write's error replaces the stop it caused.
func (p *pipeline) close(readErr error) error {
	close(p.full)
	<-p.done
	if p.err != nil && (readErr == nil || errors.Is(readErr, errPipelineStopped)) {
		return p.err
	}
	return readErr
}
