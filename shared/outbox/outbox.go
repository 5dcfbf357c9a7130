// Package outbox makes daybook's partition events at least once (docs/events.md):
// an event is recorded in the ledger's outbox (ledger/outbox.go) before it is
// published on the bus (shared/events), a publish that succeeded marks it
// published, and a sweep publishes what is still pending. It joins the wire
// format (shared/events) and the storage (shared/ledger), which know nothing
// of each other.
package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/events"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// Store is the part of the ledger the outbox uses (ledger/outbox.go).
type Store interface {
	RecordEvent(ctx context.Context, ev ledger.Event) (bool, error)
	EventPublished(ctx context.Context, ev ledger.Event) error
	PendingEvents(ctx context.Context, shard, limit int) ([]ledger.Event, ledger.ReadStats, error)
}

var _ Store = ledger.Outbox{}

// Putter publishes one event.
type Putter interface {
	Publish(ctx context.Context, detailType string, detail any) error
}

var _ Putter = (*events.Publisher)(nil)

// Outbox makes the partition events at least once: an event is recorded
// in the ledger's outbox (Record) before it is published (Publish), a
// publish that succeeded marks it published, and Republish publishes what
// is still pending (a publish that failed, a function that died after
// recording). An outbox without a bus (Enabled false) records and
// publishes nothing.
type Outbox struct {
	Store Store
	Bus   Putter
	// On is false when no bus is configured.
	On bool
}

// Enabled reports whether events are recorded and published.
func (o *Outbox) Enabled() bool { return o != nil && o.On && o.Store != nil && o.Bus != nil }

// CommittedEvent is the outbox event of a committed generation; it sets
// d.ID. Both the id and the outbox item name the dataset's ledger name
// (d.LedgerName), as the partition's row does, so the generations of one
// day under two contracts are two events.
func CommittedEvent(d *events.Committed) (ledger.Event, error) {
	day, err := civil.Parse(d.Day)
	if err != nil {
		return ledger.Event{}, fmt.Errorf("events: committed event: day %q: %w", d.Day, err)
	}
	d.ID = events.CommittedID(d.Account, d.LedgerName(), d.Day, d.Generation)
	body, err := json.Marshal(d)
	if err != nil {
		return ledger.Event{}, fmt.Errorf("events: encode %s: %w", d.ID, err)
	}
	return ledger.Event{Key: partition.Key{AccountID: d.Account, Dataset: d.LedgerName(), Day: day}, Kind: ledger.EventCommitted,
		Generation: d.Generation, ID: d.ID, DetailType: events.DetailCommitted, Detail: body}, nil
}

// StoppedEvent is the outbox event of a partition that stopped retrying.
func StoppedEvent(s partition.Stop) (ledger.Event, error) {
	d := events.StoppedOf(s)
	body, err := json.Marshal(d)
	if err != nil {
		return ledger.Event{}, fmt.Errorf("events: encode %s: %w", d.ID, err)
	}
	return ledger.Event{Key: s.Key, Kind: ledger.EventStopped, Generation: s.Generation, At: d.StoppedAt,
		ID: d.ID, DetailType: events.DetailStopped, Detail: body}, nil
}

// PublishStopped publishes the event of a partition that stopped retrying
// (a ledger.Row's FailedStop, a ledger.StoppedError's Stop): it records it
// first, which finds it recorded already when the ledger recorded it with
// the transition (ledger.Config.StoppedEvent is StoppedEvent). An error
// leaves the partition stopped all the same, and a recorded event not
// published is published by a later Republish.
func (o *Outbox) PublishStopped(ctx context.Context, st partition.Stop) error {
	ev, err := StoppedEvent(st)
	if err != nil {
		return err
	}
	return o.Send(context.WithoutCancel(ctx), ev)
}

// Record records ev, pending, unless it is recorded already (then it
// reports false and changes nothing).
func (o *Outbox) Record(ctx context.Context, ev ledger.Event) (bool, error) {
	if !o.Enabled() {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), events.DefaultTimeout)
	defer cancel()
	return o.Store.RecordEvent(ctx, ev)
}

// Publish publishes a recorded event and marks it published. An error
// leaves it pending for Republish.
func (o *Outbox) Publish(ctx context.Context, ev ledger.Event) error {
	if !o.Enabled() {
		return nil
	}
	if err := o.Bus.Publish(ctx, ev.DetailType, json.RawMessage(ev.Detail)); err != nil {
		if !errors.Is(err, events.ErrPublish) {
			err = fmt.Errorf("%w: %w", events.ErrPublish, err)
		}
		return fmt.Errorf("%s: %w", ev.ID, err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), events.DefaultTimeout)
	defer cancel()
	if err := o.Store.EventPublished(ctx, ev); err != nil {
		return fmt.Errorf("%w: %s published, but not marked so (it will be published again): %w", events.ErrPublish, ev.ID, err)
	}
	return nil
}

// Send records ev and publishes it: what a function calls when it makes
// the event. It returns the error of either step; a recorded event whose
// publish failed is published by a later Republish.
func (o *Outbox) Send(ctx context.Context, ev ledger.Event) error {
	if !o.Enabled() {
		return nil
	}
	if _, err := o.Record(ctx, ev); err != nil {
		return fmt.Errorf("%w: record %s: %w", events.ErrPublish, ev.ID, err)
	}
	return o.Publish(ctx, ev)
}

// Republished is what a Republish did.
type Republished struct {
	Pending   int // pending events found
	Published int // of those, published now
	Queries   int // index queries made
	Errors    []error
}

// MaxRepublish bounds the pending events one Republish reads per shard.
const MaxRepublish = 100

// Republish publishes the pending events of every outbox shard, at most
// MaxRepublish a shard, oldest first: ledger.OutboxShards queries when
// nothing is pending. Events recorded in the last grace are left to the
// function that recorded them (it publishes right after), so a live run's
// event is not published twice as a matter of course. An event that fails
// again stays pending; the errors are returned joined.
func (o *Outbox) Republish(ctx context.Context, now time.Time, grace time.Duration) (Republished, error) {
	var r Republished
	if !o.Enabled() {
		return r, nil
	}
	for shard := range ledger.OutboxShards {
		evs, stats, err := o.Store.PendingEvents(ctx, shard, MaxRepublish)
		r.Queries += stats.Queries
		if err != nil {
			r.Errors = append(r.Errors, err)
			continue
		}
		for _, ev := range evs {
			if now.Sub(ev.RecordedAt) < grace {
				continue
			}
			r.Pending++
			if err := o.Publish(ctx, ev); err != nil {
				r.Errors = append(r.Errors, err)
				continue
			}
			r.Published++
		}
	}
	return r, errors.Join(r.Errors...)
}
