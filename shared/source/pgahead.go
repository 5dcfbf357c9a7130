package source

import (
	"runtime"

	"github.com/jackc/pgx/v5/pgconn"
)

// A PostgreSQL read that may use three CPUs or more decodes on a goroutine
// of its own (see decodeDepth): the reading goroutine only receives the result's messages
// and copies each row's wire bytes into a wireRows, and the decoding one
// turns them into the batch's typed vectors (checks included) and hands
// full batches on. The batches are those the one-goroutine path makes, row
// for row and batch for batch (the decoding goroutine fills them by the
// same rule), so what is written of them does not depend on the path.
//
// Memory stays bounded: depth+1 wireRows of at most wireRowsBytes of
// values (plus one row) circulate between the two, and a reader that gets
// ahead waits for one to come back.
const (
	wireRowsMax   = 1024     // rows in one wireRows
	wireRowsBytes = 64 << 10 // value bytes past which a wireRows is full
)

// decodeDepth is how many wireRows the reader may have filled ahead of the
// decoder: 2 when the process may use three CPUs or more, else 0 (decode
// on the reading goroutine). At one CPU a hand-off could only add work. At
// two the exporter's encoder already runs on both (its column workers and
// its own read-ahead), and decoding apart measured worse there against a
// server on the same machine: 1.08x the CPU and 1.17x the wall time of
// decoding inline in whole-process pairs, 1.15x the CPU and 4.5 MiB more
// peak RSS for a 10M-row day (docs/performance.md). s.ahead, set only by
// tests and benchmarks (WithDecodeAhead), overrides it (negative: 0).
func (s *SQL) decodeDepth() int {
	if s.ahead != 0 {
		return max(0, s.ahead)
	}
	if runtime.GOMAXPROCS(0) < 3 {
		return 0
	}
	return 2
}

// wireRows holds result rows as the server sent them: every value's bytes
// one after another in data, and per value its length, -1 for NULL.
type wireRows struct {
	data []byte
	lens []int32
	rows int
	vals [][]byte // one row's values while decoding, reused
}

func newWireRows(cols int) *wireRows {
	return &wireRows{data: make([]byte, 0, wireRowsBytes+wireRowsBytes/4), lens: make([]int32, 0, cols*wireRowsMax), vals: make([][]byte, cols)}
}

// add copies one row's values.
func (w *wireRows) add(vals [][]byte) {
	for _, v := range vals {
		if v == nil {
			w.lens = append(w.lens, -1)
			continue
		}
		w.data = append(w.data, v...)
		w.lens = append(w.lens, int32(len(v)))
	}
	w.rows++
}

func (w *wireRows) full() bool { return w.rows >= wireRowsMax || len(w.data) >= wireRowsBytes }

func (w *wireRows) reset() { w.data, w.lens, w.rows = w.data[:0], w.lens[:0], 0 }

// decode decodes every row into bt's batch, handing it on whenever it
// fills, as the reading loop of the one-goroutine path does.
func (w *wireRows) decode(rd *pgRowDecoder, bt *batcher) error {
	vals, off, k := w.vals, 0, 0
	for range w.rows {
		for i := range vals {
			n := int(w.lens[k])
			k++
			if n < 0 {
				vals[i] = nil
				continue
			}
			// data is never nil (newWireRows), so an empty value is an
			// empty slice, not a NULL.
			vals[i] = w.data[off : off+n : off+n]
			off += n
		}
		if err := bt.room(); err != nil {
			return err
		}
		if err := rd.row(bt.b, vals); err != nil {
			return err
		}
	}
	return nil
}

// ahead is the hand-off between the reading and the decoding goroutine.
type ahead struct {
	free   chan *wireRows // emptied ones for the reader
	full   chan *wireRows // filled ones for the decoder, in order
	failed chan struct{}  // closed once the decoder failed
	done   chan struct{}  // closed when the decoder has seen every wireRows
	err    error          // the decoder's first error; read after failed or done
}

// decodeAhead reads the rest of rr, decoding on another goroutine with at
// most depth wireRows waiting for it, and returns once every row read is
// decoded. It returns the decoder's error (a refused value, or bt's
// callback's), which stops the read at once: the caller then drops the
// connection with the rest of the result. A read error is left to rr's
// Close, as on the one-goroutine path.
func decodeAhead(rr *pgconn.ResultReader, rd *pgRowDecoder, bt *batcher, depth int) error {
	n := depth + 1 // one is the reader's
	a := &ahead{free: make(chan *wireRows, n), full: make(chan *wireRows, n), failed: make(chan struct{}), done: make(chan struct{})}
	for range n {
		a.free <- newWireRows(len(rd.decs))
	}
	go a.decode(rd, bt)
	w := <-a.free
	for w != nil && rr.NextRow() {
		if w.add(rr.Values()); w.full() {
			w = a.send(w)
		}
	}
	if w != nil && w.rows > 0 {
		a.send(w)
	}
	close(a.full)
	<-a.done
	return a.err
}

// send hands w to the decoder and returns an empty wireRows, or nil once
// the decoder failed.
func (a *ahead) send(w *wireRows) *wireRows {
	// full has room for every wireRows there is: never blocks.
	a.full <- w
	select {
	case <-a.failed: // before a free one, which a failed decoder still returns
		return nil
	default:
	}
	select {
	case w := <-a.free:
		return w
	case <-a.failed:
		return nil
	}
}

func (a *ahead) decode(rd *pgRowDecoder, bt *batcher) {
	defer close(a.done)
	for w := range a.full {
		if a.err == nil {
			if a.err = w.decode(rd, bt); a.err != nil {
				close(a.failed)
			}
		}
		w.reset()
		// free has room for every wireRows there is: never blocks.
		a.free <- w
	}
}
