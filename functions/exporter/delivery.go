package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/partition"
)

// deliveryRewrites bounds how often writeDelivery rewrites the delivery
// manifest when the ledger moved while it was writing.
const deliveryRewrites = 3

// writeDelivery rewrites the account's delivery manifest for day (F4)
// from a fresh read of the ledger rows of every enabled dataset. Exporters of
// other datasets of the same day may write it at the same time, each from
// what it read; so after its PutObject each writer reads the ledger again and
// rewrites while what it wrote is no longer what the ledger says. The last
// writer always re-reads after its own write, which makes the object converge
// on the ledger's final state.
//
// The partition's outcome is already recorded when this runs. A failure is
// returned, so that SQS sends the message again: a job sent again is
// refused by Start and, the row being at rest, rewrites the manifest
// without exporting again (Service.notStarted); so does a manual request
// with an id, which finds itself served (Service.manual); one without an
// id runs again. Without it the manifest would stay missing or stale until
// another export of the day.
//
// b is the account's bucket as the run opened it, or nil: it is opened here.
func (rec *recorder) writeDelivery(ctx context.Context, acct account.Account, b *bucket.Bucket, day civil.Date, log *slog.Logger) error {
	err := rec.putDelivery(ctx, acct, b, day)
	if errors.Is(err, account.ErrNoBucketOwner) {
		// Nothing is written to a bucket whose owner cannot be checked, and
		// delivering the message again would not change that: the ledger
		// keeps the outcome, and the day's next export after the account is
		// corrected writes the manifest.
		log.ErrorContext(ctx, "delivery manifest not written: the destination's bucket owner cannot be determined", "error", err.Error())
		return nil
	}
	if err != nil {
		log.ErrorContext(ctx, "delivery manifest not written; SQS will send the message again to rewrite it", "error", err.Error())
		return fmt.Errorf("the outcome is recorded, but %w", err)
	}
	return nil
}

// putDelivery writes the delivery manifest of day into b (nil: the
// account's bucket, opened here).
func (rec *recorder) putDelivery(ctx context.Context, acct account.Account, b *bucket.Bucket, day civil.Date) error {
	prefix, err := acct.Prefix(rec.exporter.Config.Stage)
	if err != nil {
		return err
	}
	key := layout.DeliveryManifestKey(prefix, day)
	if b == nil {
		if b, err = rec.exporter.bucketOf(ctx, acct); err != nil {
			return err
		}
	}
	d, err := rec.delivery(ctx, acct, b, prefix, day)
	if err != nil {
		return err
	}
	for i := 0; ; i++ {
		body, err := d.Encode()
		if err != nil {
			return err
		}
		if err := b.Put(ctx, key, body, "application/json"); err != nil {
			return fmt.Errorf("write delivery manifest %s: %w", key, err)
		}
		now, err := rec.delivery(ctx, acct, b, prefix, day)
		if err != nil {
			return err
		}
		if now.Equivalent(d) {
			return nil
		}
		if i == deliveryRewrites {
			return fmt.Errorf("delivery manifest %s: the ledger kept changing after %d rewrites; the next export of the day rewrites it", key, i+1)
		}
		d = now
	}
}

// delivery reads the ledger rows of day for every enabled dataset of acct,
// whose bucket is b and prefix prefix.
// A snapshot dataset without a row on a day older than the account's
// newest closed day has no copy of the day by design (the sweep takes a
// snapshot's copy for the newest closed day only): it is latest-only, not
// missing.
func (rec *recorder) delivery(ctx context.Context, acct account.Account, b *bucket.Bucket, prefix string, day civil.Date) (*manifest.Delivery, error) {
	newest := acct.WithDefaults(rec.settleDelay).ClosedThrough(rec.now())
	statuses := make([]manifest.PartitionStatus, 0, len(acct.Datasets))
	for _, name := range acct.Datasets {
		st := manifest.PartitionStatus{Name: name}
		key := name // a dataset at a later contract has rows of its own (dataset.LedgerName)
		if ds, err := rec.catalog.Get(name); err == nil {
			st.Dataset, key = &ds, ds.LedgerName()
		}
		row, err := rec.ledger.Get(ctx, partition.Key{AccountID: acct.ID, Dataset: key, Day: day})
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			st.LatestOnly = st.Dataset != nil && st.Dataset.IsSnapshot() && day.Before(newest)
		case err != nil:
			return nil, fmt.Errorf("delivery manifest: read %s/%s/%s: %w", acct.ID, name, day, err)
		default:
			st.Exists = true
			st.State = string(row.State)
			st.Attempts = row.Attempts
			st.Stopped = row.Stopped
			st.LastError = row.LastError
			st.Generation = row.Generation
			st.Rows = row.Rows
			st.Files = row.Files
			st.ManifestKey = row.ManifestKey
			st.CompletedAt = row.CompletedAt
			st.Reason = string(row.Reason)
			st.Standing = standing(ctx, b, prefix, key, row)
		}
		if err := rec.annotate(ctx, &st, acct.ID, day, row); err != nil {
			return nil, err
		}
		statuses = append(statuses, st)
	}
	return manifest.NewDelivery(acct.ID, day.String(), statuses, rec.now()), nil
}

// standing reports whether the failed row's last committed generation is
// still committed in the bucket: the partition's _SUCCESS names that
// generation and the manifest the row recorded. An attempt that failed
// before its first row (the generation begins only then) left it
// there, and the customer still has the day; one that failed later removed
// it. Only a failed row that completed before is read (one bounded GET);
// a marker that cannot be read says missing, as before.
func standing(ctx context.Context, b *bucket.Bucket, prefix, ds string, row ledger.Row) bool {
	if row.State != ledger.StateFailed || row.Generation < 1 || row.ManifestKey == "" {
		return false
	}
	body, err := b.Get(ctx, layout.SuccessKey(prefix, ds, row.Day), manifest.MaxSuccessBytes)
	if err != nil {
		return false
	}
	marker, err := manifest.DecodeSuccess(body)
	return err == nil && marker.Generation == row.Generation && marker.ManifestKey == row.ManifestKey
}

// deliverAtRest rewrites the delivery manifest of row's day when the row
// is at rest (not running) and its account is enabled: the run that completed
// or failed it may have stopped before writing it, and a message of the
// partition that comes back is the one chance to converge.
func (rec *recorder) deliverAtRest(ctx context.Context, acct account.Account, row ledger.Row, log *slog.Logger) error {
	if row.State == ledger.StateRunning || !acct.Enabled {
		return nil // a newer claim runs it, and writes the manifest when it ends
	}
	return errors.Join(rec.reseedAtRest(ctx, row, log), rec.writeDelivery(ctx, acct, nil, row.Day, log))
}
