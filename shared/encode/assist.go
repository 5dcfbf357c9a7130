package encode

import (
	"sync"

	"github.com/parquet-go/parquet-go"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// Assist lets a goroutine that would otherwise wait for the encoder take
// columns of the segment it is encoding (Options.Assist): an exporter's
// reading goroutine, with every batch buffer ahead of it held by the
// encoder, helps encode them instead of sleeping until one comes back.
// Handing the columns to a goroutine already on a CPU costs no wake-up,
// where a worker goroutine started for the segment waits for the
// scheduler to find it a CPU the reader holds.
//
// One Assist serves the Parquet writers given it one after another (the
// files of one export), never two at once. The file's bytes do not depend
// on who encodes a column: each column's calls are the ones one goroutine
// would make, in the same order.
type Assist struct {
	mu      sync.Mutex
	open    *segment        // the segment offered, or nil
	helping bool            // a goroutine is in Help
	vals    []parquet.Value // its chunk of values, reused
}

// segment is a writer's segment of b from row lo; helpers join wg.
type segment struct {
	w  *parquetWriter
	b  *dataset.Batch
	lo int
	wg *sync.WaitGroup
}

// NewAssist returns an Assist with no segment open.
func NewAssist() *Assist {
	return &Assist{vals: make([]parquet.Value, 0, chunkRows)}
}

// Help encodes columns of the open segment, if any, on the calling
// goroutine until none is left to take, and reports whether it encoded
// one. It returns false at once when no segment is open or another
// goroutine is helping; a caller should then wait for what it was
// waiting for, not call Help again in a loop. Safe to call from any
// goroutine, at any time.
func (a *Assist) Help() bool {
	if a == nil {
		return false
	}
	a.mu.Lock()
	s := a.open
	if s == nil || a.helping {
		a.mu.Unlock()
		return false
	}
	a.helping = true
	s.wg.Add(1) // before the writer's Wait: its withdraw takes the lock first
	a.mu.Unlock()
	defer func() {
		// Deferred: a panic in a column must not leave the writer
		// waiting for this goroutine, nor the Assist taken.
		s.wg.Done()
		a.mu.Lock()
		a.helping = false
		a.mu.Unlock()
	}()
	return s.w.encodeColumns(s.b, s.lo, a.vals) > 0
}

// offer opens s to helpers.
func (a *Assist) offer(s *segment) {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.open = s
	a.mu.Unlock()
}

// withdraw closes the open segment: a helper that has not joined its
// wait group by now finds none. The caller then waits on the group.
func (a *Assist) withdraw() {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.open = nil
	a.mu.Unlock()
}
