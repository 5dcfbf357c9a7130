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
	w       *parquetWriter // the writer whose segment is open, or nil
	b       *dataset.Batch
	lo      int
	helping bool            // a goroutine is in Help
	vals    []parquet.Value // its chunk of values, reused
	wg      *sync.WaitGroup // the segment's: Help joins it
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
	w, b, lo, wg := a.w, a.b, a.lo, a.wg
	if w == nil || a.helping {
		a.mu.Unlock()
		return false
	}
	a.helping = true
	wg.Add(1) // before the writer's Wait: its close takes the lock first
	a.mu.Unlock()
	defer func() {
		// Deferred: a panic in a column must not leave the writer
		// waiting for this goroutine, nor the Assist taken.
		wg.Done()
		a.mu.Lock()
		a.helping = false
		a.mu.Unlock()
	}()
	return w.encodeColumns(b, lo, a.vals) > 0
}

// open offers w's segment of b from row lo to helpers, who join wg.
func (a *Assist) open(w *parquetWriter, b *dataset.Batch, lo int, wg *sync.WaitGroup) {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.w, a.b, a.lo, a.wg = w, b, lo, wg
	a.mu.Unlock()
}

// close withdraws the segment: a helper that has not joined its wait
// group by now finds none. The caller then waits on the group.
func (a *Assist) close() {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.w, a.b, a.wg = nil, nil, nil
	a.mu.Unlock()
}
