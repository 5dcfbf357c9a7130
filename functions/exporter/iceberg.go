package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/icetable"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// The account's Iceberg table (destination.table_format: iceberg) around
// the commit protocol of a day (generation.go):
//
//  1. withdraw, before the old _SUCCESS goes and before any data file is
//     overwritten or deleted, takes the day out of the table's current
//     snapshot (a day the table lacks is left alone), so the current
//     snapshot never references a file the generation is about to
//     replace;
//  2. the folder is replaced exactly as without a table (part files,
//     stale deletion, _manifest.json, _load/, _SUCCESS last): the table's
//     files live in <dataset>/metadata/, outside every dt= folder;
//  3. table, after _SUCCESS and before the ledger records the commit: the
//     table commit, the day's new files in one snapshot naming the
//     generation, day, reason and manifest (accountTable.add).
//
// A failure of step 1 or 3 fails the attempt like any failed step, and the
// ledger's retry runs the day again: a run that died anywhere leaves the
// table readable (each step is one conditional metadata write), and the
// next run converges (its withdrawal and table commit are no-ops where already
// done). A day is in the table while its _SUCCESS is, except between a
// crash and the run that follows it. A reader that follows only
// metadata/version-hint.text (DuckDB's iceberg_scan) also lags after a
// hint write that failed, which fails no step (the run logs it, naming the
// table): until the table's next operation, a repeated run's no-op
// included, writes the hint again.
//
// A table whose metadata in the bucket cannot be used (icetable.ErrBroken:
// an empty or unparsable newest metadata file, a planted one that names
// paths outside the table, one past the read limits) fails neither step:
// no retry would change it, and the files are the product. The day's files
// are delivered as without a table, and the ledger records the generation
// with its table error (manifest.CodeTableBroken: the object at fault and
// the repair command), which the console lists under "Needs attention";
// `daybook table repair` rebuilds the table from the committed days.

// GlueClients gives the Glue client acting in an account's destination,
// for the accounts that register their tables in its Glue Data Catalog
// (destination.glue).
type GlueClients interface {
	Glue(accountID string, d account.Destination) icetable.GlueAPI
}

var _ GlueClients = buckets{}

// accountTable is the account's Iceberg table of a dataset, in the run's
// bucket, and where it is registered in Glue.
type accountTable struct {
	*icetable.Table
	glue      *icetable.Registration // nil: nowhere
	bucket    string                 // the bucket's name, for the object at fault
	accountID string
}

// tableOf is the account's table of ds in b under prefix when the account
// keeps one (nil otherwise), registered in Glue when the account asks for
// it and glue is set.
func tableOf(b *bucket.Bucket, prefix string, a account.Account, ds dataset.Dataset, glue GlueClients) *accountTable {
	d := a.Destination
	if d.TableFormat != account.TableFormatIceberg {
		return nil
	}
	t := &accountTable{Table: &icetable.Table{Store: b, Location: tableLocation(prefix, ds.LedgerName()), Dataset: ds}, bucket: b.Name(), accountID: a.ID}
	if d.Glue != nil && glue != nil {
		t.glue = &icetable.Registration{API: glue.Glue(a.ID, d), Database: d.Glue.Database, Name: d.Glue.TableName(ds.Name),
			Location: icetable.TableURI(b, t.Location)}
	}
	return t
}

// maxTableErrorLen bounds the table error the ledger records.
const maxTableErrorLen = 2048

// tableBroken is the ledger's table error of a generation the account's
// table could not take (err is icetable.ErrBroken), logged with the object
// at fault and the repair command.
func (t *accountTable) broken(ctx context.Context, err error, log *slog.Logger) string {
	repair := icetable.RepairCommand(t.accountID, t.Dataset.Name)
	msg := err.Error()
	if len(msg) > maxTableErrorLen {
		msg = strings.ToValidUTF8(msg[:maxTableErrorLen], "") + "…"
	}
	object := ""
	if be := (*icetable.BrokenError)(nil); errors.As(err, &be) {
		object = "s3://" + t.bucket + "/" + strings.TrimPrefix(be.Key, "s3://"+t.bucket+"/")
	}
	log.ErrorContext(ctx, "table broken: the day's files are delivered, its Iceberg table did not take them", "code", string(manifest.CodeTableBroken),
		"table_object", object, "repair", repair, "error", msg)
	return manifest.CauseText(manifest.CodeTableBroken, errors.New(msg)) + "; the day's files are delivered; repair the table: " + repair
}

// tableLocation is the key of a dataset's table: its folder, <prefix>/<contract>/<dataset>
// (ds is its ledger name).
func tableLocation(prefix, ds string) string {
	return strings.TrimSuffix(layout.DatasetPrefix(prefix, ds), "/")
}

// withdraw takes day out of the account's table before generation next
// replaces its files (Table.Withdraw).
func (t *accountTable) withdraw(ctx context.Context, day civil.Date, next int64, log *slog.Logger) error {
	r, err := t.Withdraw(ctx, day, next)
	if err == nil {
		t.hinted(ctx, r, log)
	}
	return err
}

// hinted logs the version hint the table operation r could not write
// (icetable.Result.HintErr). It fails nothing: the operation is committed,
// and the table's next operation writes the hint again.
func (t *accountTable) hinted(ctx context.Context, r icetable.Result, log *slog.Logger) {
	if r.HintErr != nil {
		log.WarnContext(ctx, "table's version hint not written; the table's next operation writes it again",
			"table", t.Store.URI(t.Location), "table_version", r.Version, "error", r.HintErr.Error())
	}
}

// add makes the table commit of the committed generation m; it does
// nothing when the account keeps none. unregistered reports a table
// committed whose Glue registration failed (register); tableError, a table
// that could not take the generation (icetable.ErrBroken), as the ledger
// records it: the generation stands, the table waits for its repair.
func (t *accountTable) add(ctx context.Context, m *manifest.Manifest, manifestKey string, log *slog.Logger) (unregistered bool, tableError string, err error) {
	if t == nil {
		return false, "", nil
	}
	day, err := civil.Parse(m.Day)
	if err != nil {
		return false, "", fmt.Errorf("manifest day %q: %w", m.Day, err)
	}
	r, err := t.Add(ctx, icetable.Committed{Day: day, Generation: m.Generation, Reason: m.Reason,
		RunID: m.RunID, ManifestKey: manifestKey, Files: m.Files})
	if errors.Is(err, icetable.ErrBroken) {
		return false, t.broken(ctx, err, log), nil
	}
	if err != nil {
		return false, "", fmt.Errorf("commit %s to the Iceberg table: %w", day, err)
	}
	t.hinted(ctx, r, log)
	log.InfoContext(ctx, "table committed", "table_version", r.Version, "snapshot_id", r.SnapshotID,
		"changed", r.Changed, "attempts", r.Attempts)
	return !t.register(ctx, r, log), "", nil
}

// register points the table's Glue entry at the metadata the table commit left
// current, and reports false when that failed. A failure is logged (and
// counted by the run: GlueRegistrationFailures) and fails nothing: the
// generation is committed, and the table's next commit (of this day or
// any other, also one that finds the table already as it should be)
// registers it again.
func (t *accountTable) register(ctx context.Context, r icetable.Result, log *slog.Logger) bool {
	if t.glue == nil || r.Table == nil {
		return true
	}
	wrote, err := t.glue.Register(ctx, r.Table)
	if err != nil {
		log.WarnContext(ctx, "table not registered in Glue; its next table commit tries again", "glue_database", t.glue.Database,
			"glue_table", t.glue.Name, "table_version", r.Version, "error", err.Error())
		return false
	}
	if wrote {
		log.InfoContext(ctx, "table registered in Glue", "glue_database", t.glue.Database, "glue_table", t.glue.Name, "table_version", r.Version)
	}
	return true
}
