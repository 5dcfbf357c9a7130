package main

// A generation of a partition, and the commit protocol that makes it.
//
// One run of a partition builds one generation value: the run of a claimed
// job or a manual request (the whole day, or the plan of its slices), the
// run of one slice (slicerun.go) and the commit of a day's slices. It owns
// what every step needs, read or built once: the partition and its claim,
// the account (read once), its bucket (opened once), the account's prefix,
// file format and Iceberg table, the run id, and the recorder (recorder.go)
// that records it in the ledger, its outbox and metrics. Its methods below are the
// commit protocol of docs/architecture.md, in the order written there; each
// step is marked "Step N: name." where it is taken, and a test holds the
// page's list to these marks:
//
//	begin, withdraw, remove _SUCCESS, write, stale cleanup, manifest,
//	load scripts, _SUCCESS, table, change log, outbox, Complete, publish,
//	delivery manifest.
//
// A generation the bucket committed and the ledger never recorded (its run
// died after _SUCCESS) is found at begin and recovered there (recover),
// with this generation's bucket and claim.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/encode"
	"github.com/daybook-dev/daybook/shared/events"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/icetable"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/loadsql"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/outbox"
	"github.com/daybook-dev/daybook/shared/upload"
)

// generation is one run's generation of a claimed partition: the
// partition and where it is written (target, set by place), the Exporter
// it is written with and the recorder that records it. Account and Dataset
// are set once read (a run that failed before may have neither).
type generation struct {
	// rec records the generation in the ledger, the outbox and the
	// metrics; nil records nothing (an export driven on its own, as the
	// benchmark's).
	rec *recorder
	e   *Exporter
	target
	began     time.Time // when the export of the partition began
	log       *slog.Logger
	committer *Committer

	// pending is the generation begun (begin) or resumed (a slice's, the
	// commit of slices'); nil before. beginErr is begin's refusal.
	pending  *Pending
	beginErr error
}

// generationOf is the generation of p written by e, logging to log.
func (e *Exporter) generationOf(p Partition, log *slog.Logger) *generation {
	return &generation{e: e, target: target{Partition: p}, began: e.Now(), log: log}
}

// generation is the run id's generation of claim, begun at began, logging
// with its run id, attempt and reason, and recorded by rec.
func (rec *recorder) generation(claim ledger.Claim, id string, began time.Time, log *slog.Logger) *generation {
	g := rec.exporter.generationOf(Partition{Day: claim.Day, Claim: claim, RunID: id},
		log.With("run_id", id, "attempt", claim.Attempt, "reason", string(claim.Reason)))
	g.rec, g.began = rec, began
	return g
}

// export runs the claimed day: reads its account (unless the request read
// it: acct), waits for no slice of an earlier plan to be able to write,
// places the generation and writes it; a day planned in slices is recorded
// and its slices sent (planSlices) instead.
func (g *generation) export(ctx context.Context, acct *account.Account) (*Written, error) {
	if acct == nil {
		a, err := g.rec.ledger.GetAccount(ctx, g.Claim.AccountID)
		g.Account = a
		if err != nil {
			return nil, fmt.Errorf("account %s: %w", g.Claim.AccountID, err)
		}
	} else {
		g.Account = *acct
	}
	if !g.Account.Enabled {
		// Claimed before the account was disabled: record it, write nothing.
		return nil, fmt.Errorf("account %s is disabled", g.Claim.AccountID)
	}
	var err error
	if g.Dataset, err = g.rec.catalog.Resolve(g.Claim.Dataset); err != nil {
		return nil, err
	}
	// A slice of an earlier attempt may outlive it: nothing is written
	// until it cannot (its lease).
	if err := g.fence(ctx); err != nil {
		return nil, err
	}
	if err := g.place(ctx); err != nil {
		return nil, err
	}
	w, err := g.write(ctx)
	if err != nil || w.Planned == nil {
		return w, err
	}
	if err := g.planSlices(ctx, *w.Planned); err != nil {
		return nil, fmt.Errorf("plan %d slices: %w", w.Planned.Slices, err)
	}
	return w, nil
}

// place sets where the generation is written: the account's prefix, file
// format and bucket (opened here, once per run), the committer of its
// partition prefix, its Iceberg table, and how its data files are encoded
// and uploaded.
func (g *generation) place(ctx context.Context) error {
	a, e := g.Account, g.e
	prefix, err := a.Prefix(e.Config.Stage)
	if err != nil {
		return err
	}
	d := a.Destination
	format, err := d.FileFormat()
	if err != nil {
		return fmt.Errorf("account %s destination format: %w", a.ID, err)
	}
	profile, err := encode.ParseProfile(string(d.ParquetProfile))
	if err != nil {
		return fmt.Errorf("account %s destination parquet_profile: %w", a.ID, err)
	}
	if g.bucket, err = e.bucketOf(ctx, a); err != nil {
		return err
	}
	g.prefix, g.format = prefix, format
	g.partPrefix = layout.PartitionPrefix(prefix, g.Dataset.LedgerName(), g.Day)
	g.committer = &Committer{Bucket: g.bucket, Partition: g.partPrefix, RunID: g.RunID, Now: e.Now,
		Expect: manifest.Expect{AccountID: a.ID, Dataset: g.Dataset.Name, Contract: g.Dataset.ContractVersion(),
			Day: g.Day.String(), Partition: g.partPrefix, Extension: format.Extension()}}
	g.destination = strings.Join([]string{d.Bucket, prefix, string(format), string(format.Codec(d.Compression)), string(d.ParquetProfile)}, "|")
	g.upload = upload.Options{
		PartSize:      e.Config.partSize(),
		Concurrency:   e.Config.Concurrency,
		MaxObjectSize: 4 * e.Config.maxFileBytes(),
		ContentType:   format.ContentType(),
	}
	// A row group is buffered until flushed; keep it well under the file
	// size so files roll close to MaxFileBytes.
	g.encode = encode.Options{MaxRowGroupRows: e.Config.RowGroupRows, Profile: profile,
		MaxRowGroupBytes: min(64<<20, max(1<<20, e.Config.maxFileBytes()/4)), Workers: e.Config.encodeWorkers()}
	if format == fileformat.Parquet && d.Compression != "" {
		g.encode.Compression = d.Compression
	}
	g.table = tableOf(g.bucket, prefix, a, g.Dataset, e.GlueClients)
	return nil
}

// begin starts the generation: the claimed one, or one more than the
// generation the partition's current _SUCCESS commits if that is not
// lower, so a generation only ever increases, even when an earlier run
// committed and then died before the ledger heard of it. In that case (the
// bucket ahead of the ledger) the generation found is recovered and noted
// (recover) before the old _SUCCESS, the evidence, is removed, in case this
// run fails too. Then the day leaves the account's table, and the old
// _SUCCESS goes.
func (g *generation) begin(ctx context.Context) (*Pending, error) {
	claimed := g.Claim.Generation
	// Step 1: begin.
	generation, err := g.committer.nextGeneration(ctx, claimed)
	if err != nil {
		return nil, err
	}
	if found := generation - 1; found >= claimed && g.rec != nil {
		if err := g.recover(ctx, found); err != nil {
			return nil, fmt.Errorf("note committed generation %d: %w", found, err)
		}
	}
	// Step 2: withdraw. The current snapshot never references a file the
	// generation is about to replace; a broken table is left to the
	// table step, which finds it broken too and records it.
	if g.table != nil {
		if err := g.table.withdraw(ctx, g.Day, generation, g.log); err != nil && !errors.Is(err, icetable.ErrBroken) {
			return nil, fmt.Errorf("withdraw %s from the Iceberg table: %w", g.Day, err)
		}
	}
	// Step 3: remove _SUCCESS.
	return g.committer.removeSuccess(ctx, generation)
}

// recover writes the change-log entry and records the event of
// generation, committed in the bucket by a run that died before it
// recorded them (or before Complete), publishes the event, and notes the
// generation in the ledger under the claim, so no later run reuses it: the
// partition and generation are the claim's, the stats the committed
// manifest's. A generation whose _SUCCESS or manifest is not that
// generation of this partition (Committer.Committed) has nothing to
// recover, and is noted all the same.
func (g *generation) recover(ctx context.Context, generation int64) error {
	m, err := g.committer.Committed(ctx, generation)
	if err != nil {
		return err
	}
	if m != nil {
		epoch, err := g.seedEpochAt(ctx, m.StartedAt)
		if err != nil {
			return fmt.Errorf("recover generation %d: %w", generation, err)
		}
		d := g.committedDetail(generation, m, g.committer.manifestKey(), m.Totals.Bytes, epoch)
		ev, err := g.record(ctx, d)
		if err != nil {
			return fmt.Errorf("recover generation %d: %w", generation, err)
		}
		g.publish(ctx, ev)
	}
	return g.rec.ledger.NoteCommitted(ctx, g.Claim.Key, g.Claim.Token, generation)
}

// begun is the generation the data files are written into: begun when the
// first file opens, once, or resumed before (a slice's).
func (g *generation) begun(ctx context.Context) (*Pending, error) {
	if g.pending == nil && g.beginErr == nil {
		g.pending, g.beginErr = g.begin(ctx)
	}
	return g.pending, g.beginErr
}

// abort gives up the data files still being written (after the commit it
// does nothing).
func (g *generation) abort(ctx context.Context) {
	if g.pending != nil {
		g.pending.Abort(ctx)
	}
}

// write writes the day as source → encoder → committer: it checks the
// schema delivered before, takes the day's fingerprint, opens the source's
// read of the day, and only when the source hands over its first batch (or
// ends without a row) begins the generation (begun); it streams the rows
// through the encoder into data files, and commits them. On error nothing
// after the failed step runs and in-flight uploads are aborted.
//
// So every refusal found before the first row (the delivered schema, the
// tenant key, the query's result columns and their types, a source that
// cannot be reached, a value of the first batch) leaves the committed
// generation as it was: its _SUCCESS, files and table entry stay, and the
// customer keeps the day they had.
//
// A day larger than one run (E7; slices.go) is not read here: write
// decides on a plan of slices, checks the source as far as it can without
// reading a row (probe), begins the generation and returns the plan
// (Written.Planned) for the run to record and send.
func (g *generation) write(ctx context.Context) (*Written, error) {
	e := g.e
	c := content{started: e.Now().UTC()}
	if err := e.checkDelivered(ctx, &g.target, g.log); err != nil {
		return nil, err
	}
	q := partitionQuery(g.Account, g.Dataset, g.Day)
	var rows int64
	c.fp, rows = e.fingerprint(ctx, q, g.log)
	if n := e.slicesFor(&g.target, rows); n > 0 {
		if err := e.probe(ctx, q); err != nil {
			return nil, err
		}
		pending, err := g.begin(ctx)
		if err != nil {
			return nil, err
		}
		plan := e.planOf(&g.target, pending.Generation(), n, rows, c)
		e.placeBounds(ctx, q, &plan, g.log)
		return &Written{Planned: &plan, Fingerprint: c.fp}, nil
	}
	defer g.abort(ctx)
	var err error
	// Step 4: write.
	if c.files, c.prov, err = g.writeData(ctx, q, wholeDay); err != nil {
		if g.beginErr != nil {
			return nil, g.beginErr
		}
		return nil, err
	}
	return g.commit(ctx, c)
}

// replace replaces the partition's folder with the written generation,
// whose manifest is m, and returns the manifest's key: every object the
// manifest does not list goes, then the manifest, the load scripts and
// _SUCCESS last. On error nothing after the failed step runs and no
// _SUCCESS exists.
func (g *generation) replace(ctx context.Context, m *manifest.Manifest) (string, error) {
	p := g.pending
	// Step 5: stale cleanup.
	if err := p.removeStale(ctx, m.Files); err != nil {
		return "", err
	}
	// Step 6: manifest.
	manifestKey, body, err := p.writeManifest(ctx, m)
	if err != nil {
		return "", err
	}
	// Step 7: load scripts.
	if err := g.writeScripts(ctx, m); err != nil {
		return "", err
	}
	// Step 8: _SUCCESS.
	if err := p.writeSuccess(ctx, m, manifestKey, body); err != nil {
		return "", err
	}
	return manifestKey, nil
}

// commit commits the written generation: the manifest (c's files in
// order, provenance and fingerprint as read), the load scripts and
// _SUCCESS last, then the account's table, and the bucket's documents and
// the delivered schema (both best effort).
func (g *generation) commit(ctx context.Context, c content) (*Written, error) {
	m := g.manifestOf(c)
	manifestKey, err := g.replace(ctx, m)
	if err != nil {
		return nil, err
	}
	g.log.InfoContext(ctx, "partition committed", "files", len(c.files), "rows", m.Totals.Rows, "bytes", m.Totals.Bytes,
		"source_rows", c.prov.RowCount, "manifest", manifestKey)
	// Step 9: table.
	w := &Written{Manifest: m, ManifestKey: manifestKey, Bytes: m.Totals.Bytes, Fingerprint: c.fp}
	if w.Unregistered, w.TableError, err = g.table.add(ctx, m, manifestKey, g.log); err != nil {
		return nil, err
	}
	g.e.writeDocs(ctx, &g.target, g.log)
	g.e.recordSchema(ctx, g.Dataset, g.log)
	return w, nil
}

// manifestOf is the manifest of the generation holding c.
func (g *generation) manifestOf(c content) *manifest.Manifest {
	return &manifest.Manifest{
		FormatVersion: manifest.FormatVersion,
		Contract:      g.Dataset.ContractVersion(),
		AccountID:     g.Account.ID,
		Dataset:       g.Dataset.Name,
		SchemaVersion: g.Dataset.Version,
		Day:           g.Day.String(),
		Partition:     g.Dataset.Partition,
		Mode:          g.Dataset.Mode,
		Read:          g.Dataset.Read,
		RunID:         g.RunID,
		Reason:        string(g.Claim.Reason),
		Attempt:       g.Claim.Attempt,
		Format:        string(g.format),
		Compression:   string(g.format.Codec(g.Account.Destination.Compression)),
		StartedAt:     c.started,
		Schema:        manifest.SchemaOf(g.Dataset),
		Files:         c.files,
		Provenance:    manifest.Provenance{Provenance: c.prov, RequestedBy: g.Claim.RequestedBy},
		Restatement:   restatementOf(g.Claim, c.files),
	}
}

// writeScripts writes the partition's `_load/` files, rendered from the
// committed manifest m: one load script per engine that reads the
// account's store, and the table-format scripts when the account keeps a
// table.
func (g *generation) writeScripts(ctx context.Context, m *manifest.Manifest) error {
	files, err := loadScripts(g.Dataset, m, g.Account.Destination, g.partPrefix)
	if err == nil && g.table != nil {
		var more map[string][]byte
		p := placed(loadsql.Partition{Bucket: g.bucket.Name(), Day: g.Day}, g.Account.Destination)
		if more, err = loadsql.TableScripts(g.Dataset, p, g.table.Location); err == nil {
			maps.Copy(files, more)
		}
	}
	if err != nil {
		return fmt.Errorf("load scripts: %w", err)
	}
	return g.pending.writeScripts(ctx, files)
}

// record writes the change-log entry of d into the bucket and records its
// event in the outbox, in that order, and returns the event to publish.
// Either failing fails the run: the next run finds the generation
// committed and recovers both (recover).
func (g *generation) record(ctx context.Context, d *events.Committed) (ledger.Event, error) {
	// Step 10: change log.
	c := g.changeOf(d)
	key, err := c.Key(g.prefix)
	if err != nil {
		return ledger.Event{}, err
	}
	body, err := c.Encode()
	if err != nil {
		return ledger.Event{}, err
	}
	if err := g.bucket.Put(ctx, key, body, "application/x-ndjson"); err != nil {
		return ledger.Event{}, fmt.Errorf("write the change-log entry of generation %d: %w", c.Generation, err)
	}
	// Step 11: outbox.
	ev, err := outbox.CommittedEvent(d)
	if err != nil {
		return ledger.Event{}, err
	}
	if _, err := g.rec.outbox().Record(ctx, ev); err != nil {
		return ledger.Event{}, fmt.Errorf("record the committed event of generation %d: %w", d.Generation, err)
	}
	return ev, nil
}

// publish publishes a recorded event; a failure is logged and counted,
// and the event stays pending for the sweeper to publish again.
func (g *generation) publish(ctx context.Context, ev ledger.Event) {
	if err := g.rec.outbox().Publish(ctx, ev); err != nil {
		publishFailed(ctx, g.rec.metrics, g.log, ev.DetailType, err)
	}
}

// finish records the committed generation w, reports it and rewrites the
// day's delivery manifest. The generation is in the bucket whatever
// Complete says: its change-log entry and event are recorded first, and
// the event goes out after; the reseed counts the day once Complete
// recorded it.
func (g *generation) finish(ctx context.Context, w *Written) error {
	rec, claim, log := g.rec, g.Claim, g.log
	took := rec.now().Sub(g.began)
	res := ledger.Result{
		Rows: w.Manifest.Totals.Rows, Bytes: w.Bytes, Files: w.Manifest.Totals.Files,
		ManifestKey: w.ManifestKey, Duration: took, Generation: w.Manifest.Generation, TableError: w.TableError,
	}
	g.lateData(&res, w)
	var err error
	if res.SeedEpoch, err = g.seedEpochAt(ctx, g.began); err != nil {
		return g.failed(ctx, fmt.Errorf("generation %d committed: %w", w.Manifest.Generation, err))
	}
	// The change log and the outbox (record).
	ev, err := g.record(ctx, g.committedDetail(w.Manifest.Generation, w.Manifest, w.ManifestKey, w.Bytes, res.SeedEpoch))
	if err != nil {
		return g.failed(ctx, fmt.Errorf("generation %d committed: %w", w.Manifest.Generation, err))
	}
	// Step 12: Complete.
	_, err = rec.ledger.Complete(ctx, claim.Key, claim.Token, res)
	// Step 13: publish.
	g.publish(ctx, ev)
	var seedErr error // the message is sent again to count the day (reseedAtRest)
	if err == nil {
		seedErr = g.seedDayDone(ctx, res.SeedEpoch)
	}
	if errors.Is(err, ledger.ErrClaimLost) {
		log.WarnContext(ctx, "partition committed but the claim expired meanwhile; the newer claim will commit again")
		return nil
	}
	if err != nil {
		return fmt.Errorf("complete %s: %w", claim.Key, err)
	}
	props := map[string]any{"account": claim.AccountID, "dataset": claim.Dataset, "day": claim.Day.String(), "generation": w.Manifest.Generation, "run_id": g.RunID}
	log.InfoContext(ctx, "partition exported", "generation", w.Manifest.Generation, "rows", w.Manifest.Totals.Rows, "bytes", w.Bytes, "duration_ms", took.Milliseconds())
	ms := []metrics.Metric{
		{Name: "PartitionsExported", Unit: metrics.Count, Value: 1},
		{Name: "RowsExported", Unit: metrics.Count, Value: float64(w.Manifest.Totals.Rows)},
		{Name: "BytesExported", Unit: metrics.Bytes, Value: float64(w.Bytes)},
		{Name: "ExportDuration", Unit: metrics.Seconds, Value: took.Seconds()}}
	if w.Unregistered {
		ms = append(ms, metrics.Metric{Name: "GlueRegistrationFailures", Unit: metrics.Count, Value: 1})
	}
	if w.TableError != "" {
		ms = append(ms, metrics.Metric{Name: metrics.TableBrokenDeliveries, Unit: metrics.Count, Value: 1})
	}
	_ = rec.metrics.Emit(props, ms...)
	// Step 14: delivery manifest.
	return errors.Join(seedErr, rec.writeDelivery(ctx, g.Account, g.bucket, claim.Day, log))
}

// failed records a failed export of the claim (with backoff; retries are
// the ledger's job) and rewrites the day's delivery manifest. The message
// is done unless the failure could not be recorded.
func (g *generation) failed(ctx context.Context, err error) error {
	return g.failedAfter(ctx, err, time.Time{})
}

// failedAfter is failed with the next attempt no earlier than notBefore.
func (g *generation) failedAfter(ctx context.Context, err error, notBefore time.Time) error {
	rec, claim, log := g.rec, g.Claim, g.log
	props := map[string]any{"account": claim.AccountID, "dataset": claim.Dataset, "day": claim.Day.String(), "generation": claim.Generation, "run_id": g.RunID}
	fail := newFailure(err)
	row, ferr := rec.ledger.FailAfter(ctx, claim.Key, claim.Token, fail, notBefore)
	switch {
	case errors.Is(ferr, ledger.ErrClaimLost):
		log.WarnContext(ctx, "export failed and the claim was lost meanwhile", "error", err.Error(), "code", string(fail.code))
		return nil
	case ferr != nil:
		return fmt.Errorf("record failure of %s (%v): %w", claim.Key, fail, ferr)
	}
	log.ErrorContext(ctx, "export failed", "error", err.Error(), "code", string(fail.code), "attempts", row.Attempts,
		"next_attempt_at", row.NextAttemptAt, "stopped", row.Stopped)
	// PartitionsStopped is the sweeper's gauge; a failure is an event.
	_ = rec.metrics.Emit(props, metrics.Metric{Name: "PartitionFailures", Unit: metrics.Count, Value: 1})
	if st, stopped := row.FailedStop(); stopped {
		rec.publishStopped(ctx, st, log)
	}
	if g.Account.ID != "" && g.Account.Enabled {
		return rec.writeDelivery(ctx, g.Account, g.bucket, claim.Day, log)
	}
	return nil
}
