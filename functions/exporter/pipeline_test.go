package main

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/source"
)

// feedRows plays a source: n batches of one row each (the row's event_id
// names the batch) through one reused batch, as source.batcher does; it
// stops at the first error fn returns, or fails as fail says.
func feedRows(t *testing.T, ds dataset.Dataset, n int, fail readFault, fn func(*dataset.Batch) error) (int, error) {
	t.Helper()
	b := dataset.NewBatch(ds, source.BatchRows)
	b.Reset(1)
	for i := range n {
		if i == fail.at {
			return i, fail.err
		}
		row := []any{fmt.Sprintf("e%03d", i), "click", testDayStart, testDayStart, nil, nil, nil, nil, false, nil}
		if err := b.AppendRow(row); err != nil {
			t.Fatal(err)
		}
		if err := fn(b); err != nil {
			return i, err
		}
		b.Reset(int64(i) + 2)
	}
	return n, nil
}

// readFault is a read that fails with err before batch at (-1: never).
type readFault struct {
	at  int
	err error
}

var testDayStart = testDay.Start(time.UTC)

func TestPipeline(t *testing.T) {
	ds := mustDataset(t, "events")
	errWrite, errRead := errors.New("write failed"), errors.New("read failed")
	cases := []struct {
		name      string
		failWrite int // batch whose write fails (-1: none)
		failRead  int // batch before which the read fails (-1: none)
		want      error
	}{
		{"every batch in order", -1, -1, nil},
		{"a write error stops the read and is the export's", 3, -1, errWrite},
		{"a read error is the export's", -1, 5, errRead},
		{"a write error before the read's", 2, 30, errWrite},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var seen []string
			write := func(b *dataset.Batch) error {
				id := string(b.Cols[0].BytesAt(0))
				if b.Len() != 1 || b.FirstRow != int64(len(seen))+1 {
					t.Errorf("batch %s: %d rows from row %d", id, b.Len(), b.FirstRow)
				}
				if len(seen) == tc.failWrite {
					return errWrite
				}
				seen = append(seen, id)
				return nil
			}
			p := startPipeline(ds, 2, write, nil)
			fed, err := feedRows(t, ds, 40, readFault{tc.failRead, errRead}, p.feed)
			err = p.close(err)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			for i, id := range seen {
				if want := fmt.Sprintf("e%03d", i); id != want {
					t.Fatalf("batch %d written was %s", i, id)
				}
			}
			if tc.want == nil && len(seen) != 40 {
				t.Errorf("wrote %d of 40 batches", len(seen))
			}
			// A failed write stops the read within the batches in flight.
			if errors.Is(tc.want, errWrite) && fed > tc.failWrite+3 {
				t.Errorf("the read went on to batch %d after write %d failed", fed, tc.failWrite)
			}
		})
	}
}

// TestPipelineHelpsBeforeWaiting: a reader that finds every batch ahead of
// it still held by write calls help before it waits, and only then: here
// write holds the first batch until help is called, so the read could not
// go on without it.
func TestPipelineHelpsBeforeWaiting(t *testing.T) {
	ds := mustDataset(t, "events")
	gate := make(chan struct{})
	written := 0
	write := func(*dataset.Batch) error {
		<-gate
		written++
		return nil
	}
	feeds, calls, firstAt := 0, 0, -1
	var p *pipeline
	help := func() bool {
		// Until the gate opens, write returns no batch, so the count is
		// the reader's view; afterwards write may free one between the
		// reader's look and this one, so only the first call is checked.
		if n := len(p.free); n != 0 && calls == 0 {
			t.Errorf("help called with %d empty batches free", n)
		}
		calls++
		if calls > 1 {
			return false // nothing left to take: the reader waits
		}
		firstAt = feeds // feeds counts on this goroutine, the reader's
		close(gate)
		return true
	}
	// A feed that never called help would hang here (write holds the
	// first batch until it does) and fail by the test binary's timeout.
	p = startPipeline(ds, 2, write, help)
	fed, err := feedRows(t, ds, 40, readFault{at: -1}, func(b *dataset.Batch) error {
		feeds++
		return p.feed(b)
	})
	if err = p.close(err); err != nil || fed != 40 || written != 40 {
		t.Fatalf("fed %d, wrote %d, error %v", fed, written, err)
	}
	// Feeds 1 and 2 find the two empty batches; the third finds none
	// (write holds the first, the second waits for it) and helps.
	if firstAt != 3 {
		t.Fatalf("help first called in feed %d, want 3 (the first with two batches ahead and none free)", firstAt)
	}
}
