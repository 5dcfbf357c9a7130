package ledger

// The event outbox. Every partition event (a committed
// generation, a partition that stopped retrying) is recorded once, in an
// outbox item, before it is published; a publish that succeeded marks it
// published, and a sweep republishes what is still pending, so an event is
// published at least once and recorded exactly once:
//
//	outbox item:  pk=OB#<account>#<dataset>#<day>   account_id, dataset, day, generation, event_id,
//	              sk=C#<generation> | S#<generation>#<at>  detail_type, detail (JSON), recorded_at,
//	                                                 published_at, publishes, expires_at (once published),
//	                                                 due_account=OB#<n>, due_key=<recorded_at>#<pk>#<sk>
//	                                                 (while pending)
//
// A pending item is in the sparse `due` index under due_account=OB#<n>, n =
// Shard(account) % OutboxShards: a name no account id can have, so an
// account's due work never reads it, and a sweep finds every pending event
// of the fleet in OutboxShards queries that return nothing when nothing is
// pending. RecordEvent is conditional on the item not existing: a second
// record of the same event (a run that recovers a generation an earlier run
// committed, a retried write) changes nothing, even after the first was
// published.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

const (
	attrEventID     = "event_id"     // outbox items: the event's stable id
	attrDetailType  = "detail_type"  // outbox items: the EventBridge detail type
	attrDetail      = "detail"       // outbox items: the event's detail, JSON
	attrRecordedAt  = "recorded_at"  // outbox items
	attrPublishedAt = "published_at" // outbox items: the first successful publish
	attrPublishes   = "publishes"    // outbox items: successful publishes counted

	pkOutboxPrefix = "OB#"
	// dueOutbox prefixes the due_account of a pending outbox item.
	dueOutbox = "OB#"
	// OutboxShards is the number of due_account values pending events are
	// spread over; a sweep reads each once.
	OutboxShards = 4
	// OutboxRetention is how long a published event's record is kept.
	OutboxRetention = 30 * 24 * time.Hour
)

// Event kinds.
const (
	EventCommitted = "C"
	EventStopped   = "S"
)

// ErrEventInvalid is an event RecordEvent refuses (no id, no detail).
var ErrEventInvalid = errors.New("ledger: invalid outbox event")

// Event is one partition event in the outbox.
type Event struct {
	Key        partition.Key
	Kind       string // EventCommitted or EventStopped
	Generation int64
	// At tells apart the stopped events of one generation (the stop's
	// time); zero for a committed event.
	At         time.Time
	ID         string
	DetailType string
	Detail     []byte
	RecordedAt time.Time
	// PublishedAt is zero while the event is pending.
	PublishedAt time.Time
	Publishes   int
}

// Pending reports whether the event waits for a successful publish.
func (e Event) Pending() bool { return e.PublishedAt.IsZero() }

// outboxRecord is the stored form of an outbox item.
type outboxRecord struct {
	PK          string `dynamodbav:"pk"`
	SK          string `dynamodbav:"sk"`
	AccountID   string `dynamodbav:"account_id"`
	Dataset     string `dynamodbav:"dataset"`
	Day         string `dynamodbav:"day"`
	Generation  int64  `dynamodbav:"generation"`
	EventID     string `dynamodbav:"event_id"`
	DetailType  string `dynamodbav:"detail_type"`
	Detail      string `dynamodbav:"detail"`
	RecordedAt  string `dynamodbav:"recorded_at"`
	PublishedAt string `dynamodbav:"published_at,omitempty"`
	Publishes   int    `dynamodbav:"publishes"`
	DueAccount  string `dynamodbav:"due_account,omitempty"`
	DueKey      string `dynamodbav:"due_key,omitempty"`
	ExpiresAt   int64  `dynamodbav:"expires_at,omitempty"`
}

func outboxPK(k partition.Key) string {
	return pkOutboxPrefix + k.AccountID + "#" + k.Dataset + "#" + k.Day.String()
}

func outboxSK(e Event) string {
	sk := fmt.Sprintf("%s#%010d", e.Kind, e.Generation)
	if e.Kind == EventStopped {
		sk += "#" + fmtTime(e.At)
	}
	return sk
}

// OutboxShard is the outbox shard of an account's pending events.
func OutboxShard(accountID string) int { return Shard(accountID) % OutboxShards }

func outboxDueAccount(shard int) string { return fmt.Sprintf("%s%d", dueOutbox, shard) }

// RecordEvent records ev in the outbox, pending, unless it is recorded
// already: it reports whether this call recorded it. A recorded event is
// never recorded again, published or not.
func (l Outbox) RecordEvent(ctx context.Context, ev Event) (bool, error) {
	if err := validateKey(ev.Key); err != nil {
		return false, err
	}
	switch {
	case ev.Kind != EventCommitted && ev.Kind != EventStopped:
		return false, fmt.Errorf("%w: %s: kind %q", ErrEventInvalid, ev.Key, ev.Kind)
	case ev.ID == "" || ev.DetailType == "" || len(ev.Detail) == 0:
		return false, fmt.Errorf("%w: %s generation %d: id %q, detail type %q, %d bytes of detail", ErrEventInvalid, ev.Key, ev.Generation, ev.ID, ev.DetailType, len(ev.Detail))
	}
	put, err := l.outboxPut(ev)
	if err != nil {
		return false, err
	}
	_, err = l.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: put.TableName, Item: put.Item,
		ConditionExpression: put.ConditionExpression, ExpressionAttributeNames: put.ExpressionAttributeNames,
	})
	if isConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("ledger: record event %s: %w", ev.ID, err)
	}
	return true, nil
}

// outboxPut is the conditional put that records ev, pending, unless it is
// recorded already.
func (l *kernel) outboxPut(ev Event) (*types.Put, error) {
	now := l.now()
	pk, sk := outboxPK(ev.Key), outboxSK(ev)
	rec := outboxRecord{
		PK: pk, SK: sk, AccountID: ev.Key.AccountID, Dataset: ev.Key.Dataset, Day: ev.Key.Day.String(),
		Generation: ev.Generation, EventID: ev.ID, DetailType: ev.DetailType, Detail: string(ev.Detail),
		RecordedAt: fmtTime(now), DueAccount: outboxDueAccount(OutboxShard(ev.Key.AccountID)),
		DueKey: fmtTime(now) + "#" + pk + "#" + sk,
	}
	item, err := attributevalue.MarshalMap(rec)
	if err != nil {
		return nil, fmt.Errorf("ledger: encode outbox item %s/%s: %w", pk, sk, err)
	}
	expr, err := expression.NewBuilder().WithCondition(name(AttrPK).AttributeNotExists()).Build()
	if err != nil {
		return nil, fmt.Errorf("ledger: build expression: %w", err)
	}
	return &types.Put{TableName: aws.String(l.cfg.Table), Item: item,
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names()}, nil
}

// EventPublished marks ev published after a successful publish: it leaves
// the pending events, counts the publish and expires OutboxRetention later.
// Marking an event that is published already only counts the publish.
func (l Outbox) EventPublished(ctx context.Context, ev Event) error {
	if err := validateKey(ev.Key); err != nil {
		return err
	}
	now := l.now()
	upd := expression.Add(name(attrPublishes), val(1)).
		Set(name(attrPublishedAt), expression.IfNotExists(name(attrPublishedAt), val(fmtTime(now)))).
		Set(name(AttrExpiresAt), expression.IfNotExists(name(AttrExpiresAt), val(now.Add(OutboxRetention).Unix()))).
		Remove(name(AttrDueAccount)).Remove(name(AttrDueKey))
	_, err := l.update(ctx, tableKey(outboxPK(ev.Key), outboxSK(ev)), upd, name(AttrPK).AttributeExists(), types.ReturnValueNone)
	if errors.Is(err, errCondition) {
		return fmt.Errorf("%w: outbox event %s", ErrNotFound, ev.ID)
	}
	return err
}

// PendingEvents returns up to limit pending events of one outbox shard
// (limit <= 0: all), oldest recorded first. It reads the shard's index
// entries, then each event's item.
func (l Outbox) PendingEvents(ctx context.Context, shard, limit int) ([]Event, ReadStats, error) {
	if shard < 0 || shard >= OutboxShards {
		return nil, ReadStats{}, fmt.Errorf("ledger: outbox shard %d not in [0, %d)", shard, OutboxShards)
	}
	var keys []map[string]types.AttributeValue
	kc := expression.Key(AttrDueAccount).Equal(val(outboxDueAccount(shard)))
	stats, err := l.queryPages(ctx, "pending events of "+outboxDueAccount(shard), IndexDue, kc, "", limit,
		func(page *dynamodb.QueryOutput) error {
			for _, it := range page.Items {
				keys = append(keys, tableKey(avString(it[AttrPK]), avString(it[AttrSK])))
			}
			return nil
		})
	if err != nil {
		return nil, stats, err
	}
	var out []Event
	for _, k := range keys {
		item, err := l.getItem(ctx, k)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return out, stats, err
		}
		ev, err := eventFromItem(item)
		if err != nil {
			return out, stats, err
		}
		if ev.Pending() { // the index lags the table
			out = append(out, ev)
		}
	}
	return out, stats, nil
}

// Events returns every recorded event of one partition, committed ones by
// generation first, then stopped ones by generation and time.
func (l Outbox) Events(ctx context.Context, key partition.Key) ([]Event, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	var out []Event
	kc := expression.Key(AttrPK).Equal(val(outboxPK(key)))
	_, err := l.queryPages(ctx, "events of "+key.String(), "", kc, "", 0, func(page *dynamodb.QueryOutput) error {
		for _, it := range page.Items {
			ev, err := eventFromItem(it)
			if err != nil {
				return err
			}
			out = append(out, ev)
		}
		return nil
	})
	return out, err
}

func eventFromItem(item map[string]types.AttributeValue) (Event, error) {
	var rec outboxRecord
	if err := attributevalue.UnmarshalMap(item, &rec); err != nil {
		return Event{}, fmt.Errorf("ledger: outbox item %s/%s: %w", avString(item[AttrPK]), avString(item[AttrSK]), err)
	}
	where := func(attr, v string, err error) error {
		return fmt.Errorf("ledger: outbox item %s/%s: %s %q: %w", rec.PK, rec.SK, attr, v, err)
	}
	day, err := civil.Parse(rec.Day)
	if err != nil {
		return Event{}, where(attrDay, rec.Day, err)
	}
	kind, rest, _ := strings.Cut(rec.SK, "#")
	ev := Event{Key: partition.Key{AccountID: rec.AccountID, Dataset: rec.Dataset, Day: day}, Kind: kind, Generation: rec.Generation,
		ID: rec.EventID, DetailType: rec.DetailType, Detail: []byte(rec.Detail), Publishes: rec.Publishes}
	if kind == EventStopped {
		_, at, _ := strings.Cut(rest, "#")
		if ev.At, err = parseTime(at); err != nil {
			return Event{}, where(AttrSK, rec.SK, err)
		}
	}
	if ev.RecordedAt, err = parseTime(rec.RecordedAt); err != nil {
		return Event{}, where(attrRecordedAt, rec.RecordedAt, err)
	}
	if rec.PublishedAt != "" {
		if ev.PublishedAt, err = parseTime(rec.PublishedAt); err != nil {
			return Event{}, where(attrPublishedAt, rec.PublishedAt, err)
		}
	}
	return ev, nil
}
