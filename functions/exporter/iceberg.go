package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/icetable"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/loadsql"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// The account's Iceberg table (destination.table_format: iceberg) around
// the commit protocol of a day (commit.go):
//
//  1. Begin, before the old _SUCCESS goes and before any data file is
//     overwritten or deleted, withdraws the day from the table's current
//     snapshot (a day the table lacks is left alone), so the current
//     snapshot never references a file the generation is about to
//     replace;
//  2. the folder is replaced exactly as without a table (part files,
//     stale deletion, _manifest.json, _load/, _SUCCESS last): the table's
//     files live in <dataset>/metadata/, outside every dt= folder;
//  3. after _SUCCESS, and before the ledger records the commit, the day's
//     new files are delivered in one snapshot naming the generation, day,
//     reason and manifest.
//
// A failure of step 1 or 3 fails the attempt like any failed step, and the
// ledger's retry runs the day again: a run that died anywhere leaves the
// table readable (each step is one conditional metadata write), and the
// next run converges (its withdrawal and delivery are no-ops where already
// done). A day is in the table while its _SUCCESS is, except between a
// crash and the run that follows it.
//
// A table whose metadata in the bucket cannot be used (icetable.ErrBroken:
// an empty or unparsable newest metadata file, a planted one that names
// paths outside the table, one past the read limits) fails neither step:
// no retry would change it, and the files are the product. The day's files
// are delivered as without a table, and the ledger records the generation
// with its table error (manifest.CodeTableBroken: the object at fault and
// the repair command), which the console lists under "Needs attention";
// `daybook table repair` rebuilds the table from the committed days.

// Catalogs gives the Glue client acting in an account's destination, for
// the accounts that register their tables (destination.glue).
type Catalogs interface {
	Glue(accountID string, d account.Destination) icetable.GlueAPI
}

var _ Catalogs = buckets{}

// useTable sets the target's table and the withdrawal its committer runs,
// when the account keeps one, and where the table is registered in Glue,
// when the account asks for it and cats is set.
func (t *target) useTable(cats Catalogs) {
	d := t.Account.Destination
	if d.TableFormat != account.TableFormatIceberg {
		return
	}
	t.table = &icetable.Table{
		Store:    t.bucket,
		Location: tableLocation(t.prefix, t.Dataset.LedgerName()),
		Dataset:  t.Dataset,
	}
	if d.Glue != nil && cats != nil {
		t.glue = &icetable.Registration{API: cats.Glue(t.Account.ID, d), Database: d.Glue.Database, Name: d.Glue.TableName(t.Dataset.Name),
			Location: icetable.TableURI(t.bucket, t.table.Location)}
	}
	day := t.Day
	t.committer.Withdraw = func(ctx context.Context, generation int64) error {
		_, err := t.table.Withdraw(ctx, day, generation)
		if errors.Is(err, icetable.ErrBroken) {
			return nil // the delivery finds it broken too, and records it
		}
		if err != nil {
			return fmt.Errorf("withdraw %s from the Iceberg table: %w", day, err)
		}
		return nil
	}
}

// maxTableErrorLen bounds the table error the ledger records.
const maxTableErrorLen = 2048

// tableBroken is the ledger's table error of a generation the account's
// table could not take (err is icetable.ErrBroken), logged with the object
// at fault and the repair command.
func (t *target) tableBroken(ctx context.Context, err error, log *slog.Logger) string {
	repair := icetable.RepairCommand(t.Account.ID, t.Dataset.Name)
	msg := err.Error()
	if len(msg) > maxTableErrorLen {
		msg = strings.ToValidUTF8(msg[:maxTableErrorLen], "") + "…"
	}
	object := ""
	if be := (*icetable.BrokenError)(nil); errors.As(err, &be) {
		object = "s3://" + t.bucket.Name() + "/" + strings.TrimPrefix(be.Key, "s3://"+t.bucket.Name()+"/")
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

// withTableScripts adds the table-format scripts to a partition's load
// scripts when the account keeps a table.
func (t *target) withTableScripts(files map[string][]byte) (map[string][]byte, error) {
	if t.table == nil {
		return files, nil
	}
	p := placed(loadsql.Partition{Bucket: t.bucket.Name(), Day: t.Day}, t.Account.Destination)
	more, err := loadsql.TableScripts(t.Dataset, p, t.table.Location)
	if err != nil {
		return nil, err
	}
	maps.Copy(files, more)
	return files, nil
}

// deliver adds the committed generation m to the account's table; it does
// nothing when the account keeps none. unregistered reports a table
// committed whose Glue registration failed (register); tableError, a table
// that could not take the generation (icetable.ErrBroken), as the ledger
// records it: the generation stands, the table waits for its repair.
func (t *target) deliver(ctx context.Context, m *manifest.Manifest, manifestKey string, log *slog.Logger) (unregistered bool, tableError string, err error) {
	if t.table == nil {
		return false, "", nil
	}
	day, err := civil.Parse(m.Day)
	if err != nil {
		return false, "", fmt.Errorf("manifest day %q: %w", m.Day, err)
	}
	r, err := t.table.Deliver(ctx, icetable.Delivery{Day: day, Generation: m.Generation, Reason: m.Reason,
		RunID: m.RunID, ManifestKey: manifestKey, Files: m.Files})
	if errors.Is(err, icetable.ErrBroken) {
		return false, t.tableBroken(ctx, err, log), nil
	}
	if err != nil {
		return false, "", fmt.Errorf("deliver %s to the Iceberg table: %w", day, err)
	}
	log.InfoContext(ctx, "table committed", "table_version", r.Version, "snapshot_id", r.SnapshotID,
		"changed", r.Changed, "attempts", r.Attempts)
	return !t.register(ctx, r, log), "", nil
}

// register points the table's Glue entry at the metadata the delivery left
// current, and reports false when that failed. A failure is logged (and
// counted by the run: GlueRegistrationFailures) and fails nothing: the
// generation is committed, and the table's next delivery (of this day or
// any other, also one that finds the table already as it should be)
// registers it again.
func (t *target) register(ctx context.Context, r icetable.Result, log *slog.Logger) bool {
	if t.glue == nil || r.Table == nil {
		return true
	}
	wrote, err := t.glue.Register(ctx, r.Table)
	if err != nil {
		log.WarnContext(ctx, "table not registered in Glue; its next delivery tries again", "glue_database", t.glue.Database,
			"glue_table", t.glue.Name, "table_version", r.Version, "error", err.Error())
		return false
	}
	if wrote {
		log.InfoContext(ctx, "table registered in Glue", "glue_database", t.glue.Database, "glue_table", t.glue.Name, "table_version", r.Version)
	}
	return true
}
