package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"

	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/bucketdocs"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// checkDelivered refuses to export a dataset whose declaration in this
// deployment's catalog breaks the schema the account already received: a
// column renamed, removed, reordered or retyped is refused, naming the
// column; appending a nullable column is not. It runs before begin, so a
// refused run leaves the partition as it was.
//
// What the account received is what a committed generation carried, and
// two documents say what that was: the ledger's delivered schema of the
// dataset at its contract (pk=SCHEMAS, recorded after each commit,
// schemarecord.go: this deployment's, trusted), and the bucket's
// `<prefix>/<contract>/_schemas/<dataset>.json` (the account's, but in the
// customer's bucket, so hostile). Neither binds a dataset the account never
// received: the bucket's document is written for every dataset the account
// receives at its first commit of any of them, and the ledger's record is
// the deployment's, written by another account's commit too. So when the
// catalog breaks either document, the ledger's rows decide
// (ledger.EverCommitted): a generation of the dataset at this contract was
// committed for the account (or found committed in its bucket) and the run
// is refused (schema_mismatch); none was, and the run goes on, its commit
// rewriting the bucket's document. A planted document can thus only add a
// refusal for a dataset the ledger says was delivered, never lift the
// ledger's record; a document missing from the bucket lifts nothing either.
// A dataset moved to a new contract starts that contract's tree and record,
// so any change is accepted (dataset.CompatibleContract). Without a schema
// ledger (Schemas nil) the bucket's document binds whenever it exists.
//
// A document that does not read (larger than bucketdocs.MaxSchemaBytes, or
// not a delivered schema) is not daybook's: it binds nothing, as a missing
// one, and the run's commit rewrites the account's documents (rewriteDocs)
// instead of leaving it, so it can never hold the dataset back.
func (e *Exporter) checkDelivered(ctx context.Context, t *target, log *slog.Logger) error {
	var broken []error
	key := layout.SchemaKey(t.prefix, t.Dataset.LedgerName())
	b, err := t.bucket.Get(ctx, key, bucketdocs.MaxSchemaBytes)
	switch {
	case bucket.IsNotFound(err):
	case errors.Is(err, bucket.ErrTooLarge):
		t.unreadableDoc(ctx, key, err, log)
	case err != nil:
		return fmt.Errorf("read the delivered schema %s: %w", key, err)
	default:
		old, err := bucketdocs.Delivered(b)
		if err != nil {
			t.unreadableDoc(ctx, key, err, log)
			break
		}
		if err := dataset.CompatibleContract(old, t.Dataset); err != nil {
			broken = append(broken, fmt.Errorf("the catalog does not keep the schema delivered to this bucket (%s): %w", key, err))
		}
	}
	if e.Schemas == nil {
		return errors.Join(broken...)
	}
	if err := e.checkRecorded(ctx, t.Dataset); err != nil {
		broken = append(broken, err)
	}
	if len(broken) == 0 {
		return nil
	}
	committed, err := e.Schemas.EverCommitted(ctx, t.Account.ID, t.Dataset.LedgerName())
	if err != nil {
		return fmt.Errorf("the catalog changed %s; whether it was ever delivered to the account: %w", t.Dataset.LedgerName(), err)
	}
	if !committed {
		return nil // nothing of it was ever delivered to the account
	}
	return errors.Join(broken...)
}

// unreadableDoc notes a bucket document at key that daybook did not
// write (it does not read: err): it binds nothing, and the run's commit
// rewrites the account's documents.
func (t *target) unreadableDoc(ctx context.Context, key string, err error, log *slog.Logger) {
	log.WarnContext(ctx, "the delivered schema in the bucket does not read; it binds nothing and the commit rewrites it", "key", key, "error", err.Error())
	t.rewriteDocs = true
}

// checkRecorded checks ds against the schema the ledger records as
// delivered of it at its contract, and remembers what it read for
// recordSchema. A warm function that saw the record equal to the catalog's
// document reads nothing.
func (e *Exporter) checkRecorded(ctx context.Context, ds dataset.Dataset) error {
	doc, err := bucketdocs.Schema(ds)
	if err != nil {
		return err
	}
	h := sha256.Sum256(doc)
	sum, key := hex.EncodeToString(h[:]), ds.LedgerName()
	if e.schemas.has(key, sum) {
		return nil
	}
	rec, err := e.Schemas.DeliveredSchemaOf(ctx, ds.Name, ds.ContractVersion())
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		e.schemas.note(key, "") // none recorded: recordSchema writes without reading again
		return nil
	case err != nil:
		return fmt.Errorf("read the delivered schema of %s: %w", key, err)
	}
	e.schemas.note(key, rec.SHA256)
	if rec.SHA256 == sum {
		return nil
	}
	old, err := bucketdocs.Delivered(rec.Doc)
	if err != nil {
		// Recorded best effort, read the same way: a record that does not
		// read binds nothing, and the next commit replaces it.
		return nil
	}
	if err := dataset.CompatibleContract(old, ds); err != nil {
		return fmt.Errorf("the catalog does not keep the schema this deployment delivered of %s (version %d, recorded %s): %w",
			key, rec.Version, rec.UpdatedAt.UTC().Format("2006-01-02T15:04:05Z"), err)
	}
	return nil
}
