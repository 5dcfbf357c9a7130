package ledger

// Reseeds of incremental datasets.
//
// A reseed re-exports every day of one (account, dataset) from the
// account's start date under a new seed epoch, so that a customer who
// appends an incremental feed can drop its copy and load it again. Its state
// is one small item per account and dataset:
//
//	seed item:  pk=SEED#<account>  sk=<dataset>   seed_epoch (1, 2, ...), state (running | completed),
//	                                              seed_first_day, seed_last_day, seed_days,
//	                                              seed_done_days (string set of the days rebuilt),
//	                                              seed_request_id, seed_requested_by,
//	                                              started_at, completed_at, updated_at
//
// StartReseed begins an epoch (conditional: no other reseed of the dataset
// is running; the same request again finds its own epoch), and the caller
// requeues the days with reason reseed. A generation of a day in the range
// whose run started after the epoch began is part of the rebuild: the
// exporter records the epoch on the row (seed_epoch, Result.SeedEpoch) and
// adds the day to seed_done_days (SeedDayDone, conditional on the epoch; a
// string set, so a day exported twice counts once). FinishReseed marks the
// epoch completed once every day is in the set. The item carries no due or
// restate attributes, so no index ever holds it.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

// MaxSeedDays bounds one reseed (ten years of days), so the set of days
// rebuilt always fits in its item.
const MaxSeedDays = 3660

// SeedState is where a reseed stands.
type SeedState string

// Seed states.
const (
	SeedRunning   SeedState = "running"
	SeedCompleted SeedState = "completed"
)

// Seed is the reseed state of one (account, dataset).
type Seed struct {
	AccountID string
	Dataset   string
	// Epoch counts the reseeds of the dataset; a running one is the current.
	Epoch int64
	State SeedState
	// From and Through are the days rebuilt: the account's start date
	// through its last closed day when the reseed began.
	From, Through civil.Date
	Days          int
	// Done are the days rebuilt so far, oldest first.
	Done        []civil.Date
	RequestID   string
	RequestedBy string
	StartedAt   time.Time
	CompletedAt time.Time
	UpdatedAt   time.Time
}

// Running reports whether the reseed is under way.
func (s Seed) Running() bool { return s.State == SeedRunning }

// Covers reports whether day is being rebuilt by a running reseed.
func (s Seed) Covers(day civil.Date) bool {
	return s.Running() && !day.Before(s.From) && !day.After(s.Through)
}

// Counts reports whether a run of day that started at started rebuilds it
// for this reseed: the reseed runs, covers day, and the run read the source
// after the epoch began.
func (s Seed) Counts(day civil.Date, started time.Time) bool {
	return s.Covers(day) && !started.Before(s.StartedAt)
}

// Complete reports whether every day was rebuilt.
func (s Seed) Complete() bool { return s.Days > 0 && len(s.Done) >= s.Days }

// seedRecord is the stored form of a seed item (pk=SEED#<account>,
// sk=<dataset>).
type seedRecord struct {
	PK          string   `dynamodbav:"pk"`
	SK          string   `dynamodbav:"sk"`
	AccountID   string   `dynamodbav:"account_id"`
	Dataset     string   `dynamodbav:"dataset"`
	Epoch       int64    `dynamodbav:"seed_epoch"`
	State       string   `dynamodbav:"state"`
	FirstDay    string   `dynamodbav:"seed_first_day"`
	LastDay     string   `dynamodbav:"seed_last_day"`
	Days        int      `dynamodbav:"seed_days"`
	DoneDays    []string `dynamodbav:"seed_done_days,stringset"`
	RequestID   string   `dynamodbav:"seed_request_id"`
	RequestedBy string   `dynamodbav:"seed_requested_by"`
	StartedAt   string   `dynamodbav:"started_at"`
	CompletedAt string   `dynamodbav:"completed_at"`
	UpdatedAt   string   `dynamodbav:"updated_at"`
}

func seedKey(accountID, dataset string) map[string]types.AttributeValue {
	return tableKey(pkSeedPrefix+accountID, dataset)
}

// stringSet marshals as a DynamoDB string set (ADD to a set is idempotent).
type stringSet []string

func (s stringSet) MarshalDynamoDBAttributeValue() (types.AttributeValue, error) {
	return &types.AttributeValueMemberSS{Value: s}, nil
}

func seedFromItem(item map[string]types.AttributeValue) (Seed, error) {
	r, err := decodeItem[seedRecord](item)
	if err != nil {
		return Seed{}, err
	}
	s := Seed{AccountID: r.AccountID, Dataset: r.Dataset, Epoch: r.Epoch, State: SeedState(r.State), Days: r.Days,
		RequestID: r.RequestID, RequestedBy: r.RequestedBy}
	for _, f := range []struct {
		attr, value string
		dst         *civil.Date
	}{{attrSeedFirstDay, r.FirstDay, &s.From}, {attrSeedLastDay, r.LastDay, &s.Through}} {
		if *f.dst, err = civil.Parse(f.value); err != nil {
			return Seed{}, malformed(item, f.attr, strconv.Quote(f.value), err)
		}
	}
	for _, d := range r.DoneDays {
		day, err := civil.Parse(d)
		if err != nil {
			return Seed{}, malformed(item, attrSeedDoneDays, strconv.Quote(d), err)
		}
		s.Done = append(s.Done, day)
	}
	slices.SortFunc(s.Done, civil.Date.Compare)
	for _, f := range []struct {
		attr, value string
		dst         *time.Time
	}{{attrStartedAt, r.StartedAt, &s.StartedAt}, {attrCompletedAt, r.CompletedAt, &s.CompletedAt}, {attrUpdatedAt, r.UpdatedAt, &s.UpdatedAt}} {
		if *f.dst, err = parseTime(f.value); err != nil {
			return Seed{}, malformed(item, f.attr, strconv.Quote(f.value), err)
		}
	}
	return s, nil
}

// ReseedRequest asks for a reseed of one (account, dataset).
type ReseedRequest struct {
	AccountID string
	Dataset   string
	// From and Through are the days to rebuild, inclusive.
	From, Through civil.Date
	// RequestID identifies the request: the same request again (a
	// redelivered message) finds the epoch it started instead of another.
	RequestID   string
	RequestedBy string
}

// Validate checks the request's fields; errors name the field and value.
func (r ReseedRequest) Validate() error {
	if err := validateKey(partition.Key{AccountID: r.AccountID, Dataset: r.Dataset, Day: r.From}); err != nil {
		return fmt.Errorf("ledger: reseed: %w", err)
	}
	switch {
	case r.From.IsZero() || r.Through.IsZero():
		return fmt.Errorf("ledger: reseed %s/%s: from %q and through %q must both be days", r.AccountID, r.Dataset, r.From, r.Through)
	case r.Through.Before(r.From):
		return fmt.Errorf("ledger: reseed %s/%s: through %s is before from %s", r.AccountID, r.Dataset, r.Through, r.From)
	case r.From.DaysUntil(r.Through)+1 > MaxSeedDays:
		return fmt.Errorf("ledger: reseed %s/%s: from %s through %s is %d days; at most %d", r.AccountID, r.Dataset, r.From, r.Through, r.From.DaysUntil(r.Through)+1, MaxSeedDays)
	case strings.TrimSpace(r.RequestID) == "" || len(r.RequestID) > 128:
		return fmt.Errorf("ledger: reseed %s/%s: request id %q (want 1 to 128 characters)", r.AccountID, r.Dataset, r.RequestID)
	}
	return nil
}

// Seed reads the reseed state of (account, dataset); ErrNotFound when the
// dataset was never reseeded.
func (l Seeds) Seed(ctx context.Context, accountID, dataset string) (Seed, error) {
	item, err := l.getItem(ctx, seedKey(accountID, dataset))
	if errors.Is(err, ErrNotFound) {
		return Seed{}, fmt.Errorf("%w: no reseed of %s/%s", ErrNotFound, accountID, dataset)
	}
	if err != nil {
		return Seed{}, err
	}
	return seedFromItem(item)
}

// StartReseed begins a new seed epoch for the request's (account, dataset):
// one conditional write, refused with ErrConflict while another reseed of
// it runs. The same request again (same RequestID) is not a new reseed: it
// returns the seed that request started, with started false, so a
// redelivered message carries on where it stopped. The caller then queues
// the days (Requeue with ReasonReseed).
func (l Seeds) StartReseed(ctx context.Context, req ReseedRequest) (seed Seed, started bool, err error) {
	if err := req.Validate(); err != nil {
		return Seed{}, false, err
	}
	nowS := fmtTime(l.now())
	upd := expression.Add(name(attrSeedEpoch), val(1)).
		Set(name(attrState), val(string(SeedRunning))).
		Set(name(attrAccountID), val(req.AccountID)).
		Set(name(attrDataset), val(req.Dataset)).
		Set(name(attrSeedFirstDay), val(req.From.String())).
		Set(name(attrSeedLastDay), val(req.Through.String())).
		Set(name(attrSeedDays), val(req.From.DaysUntil(req.Through)+1)).
		Set(name(attrSeedRequestID), val(req.RequestID)).
		Set(name(attrSeedRequestBy), val(req.RequestedBy)).
		Set(name(attrStartedAt), val(nowS)).
		Set(name(attrUpdatedAt), val(nowS)).
		Remove(name(attrSeedDoneDays)).Remove(name(attrCompletedAt))
	cond := expression.And(
		expression.Or(name(AttrPK).AttributeNotExists(), name(attrState).NotEqual(val(string(SeedRunning)))),
		expression.Or(name(attrSeedRequestID).AttributeNotExists(), name(attrSeedRequestID).NotEqual(val(req.RequestID))))
	out, err := l.update(ctx, seedKey(req.AccountID, req.Dataset), upd, cond, types.ReturnValueAllNew)
	if errors.Is(err, errCondition) {
		cur, rerr := seedFromItem(out)
		switch {
		case rerr != nil:
			return Seed{}, false, fmt.Errorf("%w: reseed %s/%s: %w", ErrConflict, req.AccountID, req.Dataset, rerr)
		case cur.RequestID == req.RequestID:
			return cur, false, nil
		}
		return Seed{}, false, fmt.Errorf("%w: a reseed of %s/%s is running: epoch %d since %s, %d of %d days rebuilt",
			ErrConflict, req.AccountID, req.Dataset, cur.Epoch, fmtTime(cur.StartedAt), len(cur.Done), cur.Days)
	}
	if err != nil {
		return Seed{}, false, err
	}
	seed, err = seedFromItem(out)
	if err != nil {
		return Seed{}, false, fmt.Errorf("ledger: reseed %s/%s took effect, but the item it returned cannot be read: %w", req.AccountID, req.Dataset, err)
	}
	return seed, true, nil
}

// SeedDayDone records that key's day was rebuilt for the seed epoch (its
// generation committed from a run that started after the epoch began):
// conditional on that epoch still running and covering the day. Adding a
// day twice counts it once. A seed that moved on is ErrConflict.
func (l Seeds) SeedDayDone(ctx context.Context, key partition.Key, epoch int64) (Seed, error) {
	if err := validateKey(key); err != nil {
		return Seed{}, err
	}
	day := key.Day.String()
	upd := expression.Add(name(attrSeedDoneDays), val(stringSet{day})).Set(name(attrUpdatedAt), val(fmtTime(l.now())))
	cond := expression.And(name(attrSeedEpoch).Equal(val(epoch)), name(attrState).Equal(val(string(SeedRunning))),
		name(attrSeedFirstDay).LessThanEqual(val(day)), name(attrSeedLastDay).GreaterThanEqual(val(day)))
	out, err := l.update(ctx, seedKey(key.AccountID, key.Dataset), upd, cond, types.ReturnValueAllNew)
	if errors.Is(err, errCondition) {
		return Seed{}, fmt.Errorf("%w: reseed epoch %d of %s/%s is not running over %s", ErrConflict, epoch, key.AccountID, key.Dataset, day)
	}
	if err != nil {
		return Seed{}, err
	}
	return seedFromItem(out)
}

// FinishReseed marks the seed epoch completed once every day is rebuilt:
// conditional on the epoch running. finished is true for the call that
// completed it; an epoch already completed returns it with finished false.
// An epoch with days left, or one that a newer reseed replaced, is
// ErrConflict.
func (l Seeds) FinishReseed(ctx context.Context, accountID, dataset string, epoch int64) (seed Seed, finished bool, err error) {
	for range 3 {
		cur, err := l.Seed(ctx, accountID, dataset)
		if err != nil {
			return Seed{}, false, err
		}
		switch {
		case cur.Epoch != epoch:
			return Seed{}, false, fmt.Errorf("%w: reseed of %s/%s is at epoch %d, not %d", ErrConflict, accountID, dataset, cur.Epoch, epoch)
		case cur.State == SeedCompleted:
			return cur, false, nil
		case !cur.Complete():
			return Seed{}, false, fmt.Errorf("%w: reseed epoch %d of %s/%s has rebuilt %d of %d days", ErrConflict, epoch, accountID, dataset, len(cur.Done), cur.Days)
		}
		nowS := fmtTime(l.now())
		upd := expression.Set(name(attrState), val(string(SeedCompleted))).
			Set(name(attrCompletedAt), val(nowS)).Set(name(attrUpdatedAt), val(nowS))
		cond := expression.And(name(attrSeedEpoch).Equal(val(epoch)), name(attrState).Equal(val(string(SeedRunning))))
		out, err := l.update(ctx, seedKey(accountID, dataset), upd, cond, types.ReturnValueAllNew)
		if errors.Is(err, errCondition) {
			continue // finished or replaced meanwhile: look again
		}
		if err != nil {
			return Seed{}, false, err
		}
		seed, err := seedFromItem(out)
		return seed, err == nil, err
	}
	return Seed{}, false, fmt.Errorf("%w: reseed of %s/%s kept changing", ErrConflict, accountID, dataset)
}
