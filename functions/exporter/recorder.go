package main

// The recorder of a run: what a generation keeps its record with. The
// Service builds one per run from what it holds (Service.recorder) and hands it to
// the run's generation, which records through it and never calls back
// into the Service: the claim's outcome in the ledger (Complete,
// FailAfter, NoteCommitted, the slices' records), the events in the
// outbox, the metrics, the messages it queues (slices, a reseed's
// completion) and the day's delivery manifest (delivery.go).

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/outbox"
)

// recorder records the runs of one message: the Service's catalog, ledger,
// jobs queue, clock, randomness, metrics and lifecycle as they were when
// it was built, and the Exporter that opens an account's bucket for the
// delivery manifest.
type recorder struct {
	catalog  *dataset.Set
	ledger   LedgerAPI
	queue    jobs.Queue
	exporter *Exporter
	now      func() time.Time
	rand     io.Reader
	metrics  *metrics.Emitter
	// lifecycle: reseeds, restatement checks and events; nil for none.
	lifecycle   *Lifecycle
	settleDelay time.Duration
}

// outbox is the event outbox; nil-safe (Enabled false) when no events are
// published.
func (rec *recorder) outbox() *outbox.Outbox {
	if rec.lifecycle == nil {
		return nil
	}
	return rec.lifecycle.Outbox
}

// runID is a new run id: the time and 6 random bytes.
func (rec *recorder) runID() (string, error) {
	var b [6]byte
	rd := rec.rand
	if rd == nil {
		rd = rand.Reader
	}
	if _, err := io.ReadFull(rd, b[:]); err != nil {
		return "", fmt.Errorf("run id: %w", err)
	}
	return "run_" + rec.now().UTC().Format("20060102T150405Z") + "_" + hex.EncodeToString(b[:]), nil
}
