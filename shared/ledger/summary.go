package ledger

// Account summaries: the fleet view at any fleet size (issue 22 §3).
//
//	summary:     pk=FS#<account>  sk=SUMMARY  doc (JSON of Summary), as_of,
//	                                          fleet_shard=F#<nn>, fleet_key=<rank>
//	name entry:  pk=FS#<account>  sk=NAME     the same, fleet_shard=N#<nn>,
//	                                          fleet_key=<lower-case name>#<account>
//	stale mark:  pk=FS#<account>  sk=STALE    fleet_shard=Z#<nn>, fleet_key=<stamp>#<account>
//	row's mark:  a partition row  fleet_shard=Z#<nn>, fleet_key=<stamp>#<account>#<dataset>#<day>
//
// The summary holds an account's partitions by phase, its oldest day not
// exported, its newest export and its failures of the last day. It is
// computed from the account's own rows (Refresh: a Query per dataset, and
// the history of the rows that changed in the last day), never by adding
// deltas: a transition's condition often admits several states (Claim,
// Requeue, ClaimManual), and an UpdateItem returns the old or the new item,
// not both, so an ADD would have to know a from-state the write does not
// tell. A recomputation cannot drift, whatever retries, races and refused
// conditions did.
//
// Who asks for it: every transition that can change a row's phase marks
// the row itself in the same write (fleet_shard=Z#<nn>, fleet_key=
// <stamp>#<account>#<dataset>#<day>), so the mark exists if and only if the
// transition landed; a transition that stops a row (whose fleet entry is
// its stopped one) puts the account's mark in the transaction that records
// its event (stoptransition.go), and an account write in its own transaction. A write of many rows (MaterializeDays, Requeue) puts
// the account's mark once, before its writes: a crash between the two
// leaves a mark whose refresh finds nothing new. Each sweep refreshes the
// marked accounts, once each (StaleSummaries, RefreshMarked), and removes
// the marks at least StaleSettle old: by then the write that marked has
// landed and the refresh's reads see it. A younger mark stays, so its
// account is refreshed again by the next sweep; a mark moved by a later
// transition stays too (a mark is removed only if it is the one read).
//
// The summaries are in the fleet index, FleetShards shards sorted worst
// first (rank), so a page of the fleet view reads FleetShards queries of at
// most a page each, whatever the number of accounts (FleetPage); the name
// entries make a name-prefix search as bounded (SearchFleet), and the
// summary's key makes an account id one GetItem (FleetSummary). A summary
// that is missing (an account not changed since summaries exist) is built
// and stored on its first read by id, or when the account next changes; a
// reader that may not write computes it on each read by id and stores
// nothing (FleetSummaryReadOnly).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/partition"
)

const (
	pkSummaryPrefix = "FS#"
	skSummary       = "SUMMARY"
	skSummaryName   = "NAME"
	skSummaryStale  = "STALE"
	fleetSummary    = "F#"
	fleetName       = "N#"
	fleetStale      = "Z#"
	asOfFormat      = "2006-01-02T15:04:05.000000000Z" // fixed width: string order is time order

	// StaleSettle is how old a stale mark must be before a sweep refreshes
	// the account: longer than a transition takes to land after its mark.
	StaleSettle = time.Minute
	// FailureWindow is how far back a summary keeps failed attempts.
	FailureWindow = 24 * time.Hour
)

// The phases of a partition row, as the fleet view counts them.
const (
	PhaseCompleted = "completed"
	PhaseRunning   = "running" // started by an exporter
	PhaseClaimed   = "claimed" // claimed by a sweep, its job in the queue
	// PhaseRequested: an operator sent a re-export request that no exporter
	// has claimed yet (reexport.go); the row is otherwise at rest.
	PhaseRequested = "requested"
	PhaseQueued    = "queued"  // pending or queued: waits for a sweep
	PhaseFailed    = "failed"  // will retry after its backoff
	PhaseStopped   = "stopped" // failed too often; waits for a requeue
)

// PhaseOf is the phase of a row (a full row, or one from the due index,
// which does not project a re-export request's note). A row at rest
// (completed, queued, failed, stopped) whose re-export request was sent and
// not yet claimed is requested; a running row is running or claimed, with
// or without one.
func PhaseOf(r Row) string {
	if !r.ReexportRequestedAt.IsZero() && r.State != StateRunning {
		return PhaseRequested
	}
	switch r.State {
	case StateCompleted:
		return PhaseCompleted
	case StateRunning:
		if r.StartedAt.IsZero() {
			return PhaseClaimed
		}
		return PhaseRunning
	case StateQueued, StatePending:
		return PhaseQueued
	case StateFailed:
		if r.Stopped || strings.HasPrefix(r.DueKey, dueStopped) {
			return PhaseStopped
		}
		return PhaseFailed
	}
	return string(r.State)
}

// Summary is one account's line of the fleet view, as of its last refresh.
type Summary struct {
	Account  string         `json:"account"`
	Name     string         `json:"name"`
	Enabled  bool           `json:"enabled"`
	Datasets []string       `json:"datasets"`
	Counts   map[string]int `json:"counts"` // by PhaseOf
	// OldestDue is the oldest day not completed; LastExport the newest
	// completed day, LastExportAt when it completed.
	OldestDue    string    `json:"oldest_due,omitempty"`
	LastExport   string    `json:"last_export,omitempty"`
	LastExportAt time.Time `json:"last_export_at,omitzero"`
	// Failures are when attempts ended failed, stopped or with their lease
	// expired, in the FailureWindow before AsOf, newest first.
	Failures []time.Time `json:"failures,omitempty"`
	AsOf     time.Time   `json:"as_of"`
}

// Severity orders accounts worst first: stopped partitions (3), failed
// ones (2), days not exported (1), none (0).
func (s Summary) Severity() int {
	return Severity(s.Counts[PhaseStopped], s.Counts[PhaseFailed], s.OldestDue)
}

// Severity is the worst-first rank of an account with stopped and failed
// partitions and its oldest day not exported (empty: none): 3 with any
// stopped, else 2 with any failed, else 1 with a day due, else 0. The
// fleet index sorts by it, and the console's pages order by it.
func Severity(stopped, failed int, oldestDue string) int {
	switch {
	case stopped > 0:
		return 3
	case failed > 0:
		return 2
	case oldestDue != "":
		return 1
	}
	return 0
}

// rank is the summary's fleet key: worst first, then the oldest due day
// (none last), then the account id.
func (s Summary) rank() string {
	return fmt.Sprintf("%d#%s#%s", 3-s.Severity(), cmpOr(s.OldestDue, "~"), s.Account)
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// FailuresSince counts the failures at or after t.
func (s Summary) FailuresSince(t time.Time) int {
	n := 0
	for _, f := range s.Failures {
		if !f.Before(t) {
			n++
		}
	}
	return n
}

// Summarize computes an account's summary from its rows and the attempt
// history of those rows, as of asOf.
func Summarize(a account.Account, rows []Row, attempts []Attempt, asOf time.Time) Summary {
	s := Summary{Account: a.ID, Name: a.Name, Enabled: a.Enabled, Datasets: slices.Clone(a.Datasets), Counts: map[string]int{}, AsOf: asOf.UTC()}
	for _, r := range rows {
		s.Counts[PhaseOf(r)]++
		// A completed day with a re-export request on its way is still
		// delivered: its state, not its phase, says so.
		d, done := r.Day.String(), r.State == StateCompleted
		if !done && (s.OldestDue == "" || d < s.OldestDue) {
			s.OldestDue = d
		}
		if done && (d > s.LastExport || (d == s.LastExport && r.CompletedAt.After(s.LastExportAt))) {
			s.LastExport, s.LastExportAt = d, r.CompletedAt.UTC()
		}
	}
	since := asOf.Add(-FailureWindow)
	for _, at := range attempts {
		if at.Outcome != OutcomeCompleted && !at.FinishedAt.Before(since) {
			s.Failures = append(s.Failures, at.FinishedAt.UTC())
		}
	}
	slices.SortFunc(s.Failures, func(x, y time.Time) int { return y.Compare(x) })
	return s
}

// MayHaveFailedSince reports whether r can have an attempt that failed at
// or after t: a row that ended an attempt in failure since t was updated
// since t (every transition sets updated_at), and a row completed on its
// first attempt of a scheduled run had no failure since it was created.
func MayHaveFailedSince(r Row, t time.Time) bool {
	if r.UpdatedAt.Before(t) {
		return false
	}
	return !(r.State == StateCompleted && r.Attempts <= 1 && r.Reason == partition.ReasonScheduled)
}

// summaryRecord is the stored form of a summary and of its name entry.
type summaryRecord struct {
	PK             string `dynamodbav:"pk"`
	SK             string `dynamodbav:"sk"`
	AccountID      string `dynamodbav:"account_id"`
	Doc            string `dynamodbav:"doc"`
	AsOf           string `dynamodbav:"as_of"`
	AccountVersion int64  `dynamodbav:"account_version"`
	RowsAt         string `dynamodbav:"rows_at"`
	FleetShard     string `dynamodbav:"fleet_shard"`
	FleetKey       string `dynamodbav:"fleet_key"`
}

func summaryPK(accountID string) string { return pkSummaryPrefix + accountID }

func summaryShard(prefix string, shard int) string { return fmt.Sprintf("%s%02d", prefix, shard) }

func nameKey(name, accountID string) string { return strings.ToLower(name) + "#" + accountID }

// staleMark is the write that asks for a refresh of accountID's summary.
func (l *kernel) staleMark(accountID string) *types.Put {
	now := l.now()
	item := tableKey(summaryPK(accountID), skSummaryStale)
	item[attrAccountID] = s(accountID)
	item[AttrFleetShard] = s(summaryShard(fleetStale, Shard(accountID)))
	item[AttrFleetKey] = s(fmtTime(now) + "#" + accountID)
	return &types.Put{TableName: aws.String(l.cfg.Table), Item: item}
}

// markStale puts accountID's stale mark; a write of many rows
// (MaterializeDays, Requeue) calls it before its own writes, so that it
// marks the account once rather than each row.
func (l *kernel) markStale(ctx context.Context, accountID string) error {
	p := l.staleMark(accountID)
	if _, err := l.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: p.TableName, Item: p.Item}); err != nil {
		return fmt.Errorf("ledger: mark the summary of %s stale: %w", accountID, err)
	}
	return nil
}

// Refresh recomputes accountID's summary from its rows (a Query per
// dataset, and the history of the rows that changed in the last
// FailureWindow) and stores it, unless a refresh that read newer inputs
// stored one already: inputs are ordered by the account's version, then
// the newest updated_at of its rows, then the time the refresh began to
// read (summaryNewer). Two refreshes at one instant both store, so a
// refresh right after an account write (at the same clock reading as the
// sweep's) is never refused. A deleted account's summary leaves the fleet
// index.
func (l Fleet) Refresh(ctx context.Context, accountID string) (Summary, error) {
	asOf := l.cfg.Now().UTC()
	a, err := l.accounts().GetAccount(ctx, accountID)
	if errors.Is(err, ErrNotFound) {
		return Summary{}, l.dropSummary(ctx, accountID)
	}
	if err != nil {
		return Summary{}, err
	}
	return l.refresh(ctx, a, asOf)
}

// refresh computes a's summary as of asOf (when its reads began) and
// stores it, as Refresh.
func (l Fleet) refresh(ctx context.Context, a account.Account, asOf time.Time) (Summary, error) {
	accountID := a.ID
	sum, rowsAt, err := l.summarize(ctx, a, asOf)
	if err != nil {
		return Summary{}, err
	}
	doc, err := json.Marshal(sum)
	if err != nil {
		return Summary{}, fmt.Errorf("ledger: encode summary of %s: %w", accountID, err)
	}
	for _, e := range []struct{ sk, shard, key string }{
		{skSummary, summaryShard(fleetSummary, Shard(accountID)), sum.rank()},
		{skSummaryName, summaryShard(fleetName, Shard(accountID)), nameKey(a.Name, accountID)},
	} {
		rec := summaryRecord{PK: summaryPK(accountID), SK: e.sk, AccountID: accountID, Doc: string(doc),
			AsOf: asOf.Format(asOfFormat), AccountVersion: a.Version, RowsAt: rowsAt, FleetShard: e.shard, FleetKey: e.key}
		item, err := attributevalue.MarshalMap(rec)
		if err != nil {
			return Summary{}, fmt.Errorf("ledger: encode summary of %s: %w", accountID, err)
		}
		expr, err := expression.NewBuilder().WithCondition(summaryNewer(rec)).Build()
		if err != nil {
			return Summary{}, fmt.Errorf("ledger: build expression: %w", err)
		}
		_, err = l.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                 aws.String(l.cfg.Table),
			Item:                      item,
			ConditionExpression:       expr.Condition(),
			ExpressionAttributeNames:  expr.Names(),
			ExpressionAttributeValues: expr.Values(),
		})
		if isConditionFailed(err) {
			continue // a refresh that read later wrote it
		}
		if err != nil {
			return Summary{}, fmt.Errorf("ledger: write summary of %s: %w", accountID, err)
		}
	}
	return sum, nil
}

// summarize computes a's summary as of asOf from its rows (a Query per
// dataset, and the history of the rows that changed in the last
// FailureWindow), and the newest updated_at of those rows; it writes
// nothing.
func (l Fleet) summarize(ctx context.Context, a account.Account, asOf time.Time) (Summary, string, error) {
	accountID := a.ID
	var rows []Row
	for _, ds := range a.Datasets {
		kc := expression.Key(AttrPK).Equal(val(partitionPK(accountID, l.cfg.Catalog.Current(ds)))) // at a later contract, its rows
		if _, err := l.queryPages(ctx, "summary rows of "+accountID+"/"+ds, "", kc, "", 0, appendRows(&rows)); err != nil {
			return Summary{}, "", err
		}
	}
	var attempts []Attempt
	for _, r := range rows {
		if !MayHaveFailedSince(r, asOf.Add(-FailureWindow)) {
			continue
		}
		h, err := l.partitions().History(ctx, r.Key)
		if err != nil {
			return Summary{}, "", err
		}
		attempts = append(attempts, h...)
	}
	rowsAt := ""
	for _, r := range rows {
		rowsAt = max(rowsAt, fmtTime(r.UpdatedAt))
	}
	return Summarize(a, rows, attempts, asOf), rowsAt, nil
}

// summaryNewer is the condition under which rec replaces the stored
// summary: none is stored (or one stored before summaries kept their
// inputs), or rec read a newer account version, or the same version and
// newer rows, or the same inputs at the same time or later.
func summaryNewer(rec summaryRecord) expression.ConditionBuilder {
	v, r, a := name(attrAccountVersion), name(attrRowsAt), name(attrAsOf)
	return expression.Or(v.AttributeNotExists(),
		v.LessThan(val(rec.AccountVersion)),
		expression.And(v.Equal(val(rec.AccountVersion)), r.LessThan(val(rec.RowsAt))),
		expression.And(v.Equal(val(rec.AccountVersion)), r.Equal(val(rec.RowsAt)), a.LessThanEqual(val(rec.AsOf))))
}

// dropSummary takes a deleted account's summary and name entry out of the
// fleet index.
func (l *kernel) dropSummary(ctx context.Context, accountID string) error {
	for _, sk := range []string{skSummary, skSummaryName} {
		upd := expression.Remove(name(AttrFleetShard)).Remove(name(AttrFleetKey))
		_, err := l.update(ctx, tableKey(summaryPK(accountID), sk), upd, name(AttrPK).AttributeExists(), types.ReturnValueNone)
		if err != nil && !errors.Is(err, errCondition) {
			return err
		}
	}
	return nil
}

// StaleMark is an account whose summary a transition marked stale, with
// the marks read: its account's mark, or rows' own marks.
type StaleMark struct {
	Account string
	marks   []markRef
}

// markRef is one mark as read: the item that carries it and its fleet key.
type markRef struct{ pk, sk, key string }

// staleReadItems is how many marks StaleSummaries reads at least (one
// query page): an account's rows mark themselves, so an account may have
// many marks.
const staleReadItems = 1000

// StaleSummaries reads the marks of shard (one of FleetShards), oldest
// first, and returns the marked accounts, at most limit of them, each
// with its marks (one query when there are fewer than max(limit,
// staleReadItems) marks).
func (l Fleet) StaleSummaries(ctx context.Context, shard, limit int) ([]StaleMark, ReadStats, error) {
	var marks []StaleMark
	at := map[string]int{}
	kc := expression.Key(AttrFleetShard).Equal(val(summaryShard(fleetStale, shard)))
	st, err := l.queryPages(ctx, "stale summaries of "+summaryShard(fleetStale, shard), IndexFleet, kc, "", max(limit, staleReadItems),
		func(page *dynamodb.QueryOutput) error {
			for _, it := range page.Items {
				key := avString(it[AttrFleetKey])
				_, rest, _ := strings.Cut(key, "#")
				acct, _, _ := strings.Cut(rest, "#")
				i, ok := at[acct]
				if !ok {
					if len(marks) == limit {
						continue
					}
					i, at[acct] = len(marks), len(marks)
					marks = append(marks, StaleMark{Account: acct})
				}
				marks[i].marks = append(marks[i].marks, markRef{pk: avString(it[AttrPK]), sk: avString(it[AttrSK]), key: key})
			}
			return nil
		})
	return marks, st, err
}

// RefreshMarked refreshes a marked account's summary, then removes each of
// its marks that is at least StaleSettle old and that no later transition
// moved. A younger account mark may belong to a transition that has not
// landed yet, and a younger row mark to a write the refresh's (eventually
// consistent) reads may not have seen: it stays, and the next sweep
// refreshes the account again. A failed refresh keeps the marks.
func (l Fleet) RefreshMarked(ctx context.Context, m StaleMark) error {
	settled := fmtTime(l.now().Add(-StaleSettle)) + dueUpperBound
	if _, err := l.Refresh(ctx, m.Account); err != nil {
		return err
	}
	for _, r := range m.marks {
		if r.key >= settled {
			continue
		}
		upd := expression.Remove(name(AttrFleetShard)).Remove(name(AttrFleetKey))
		_, err := l.update(ctx, tableKey(r.pk, r.sk), upd, name(AttrFleetKey).Equal(val(r.key)), types.ReturnValueNone)
		if err != nil && !errors.Is(err, errCondition) { // a condition failed: moved by a later transition, the next sweep takes it
			return err
		}
	}
	return nil
}

// FleetSummary returns one account's summary (one GetItem), building it
// from the account's rows and storing it if it is missing (as Refresh).
func (l Fleet) FleetSummary(ctx context.Context, accountID string) (Summary, error) {
	return l.fleetSummary(ctx, accountID, true)
}

// FleetSummaryReadOnly is FleetSummary for a reader that may not write
// the ledger (a console deployed without its actions): a missing summary
// is computed from the account's rows, as FleetSummary builds it, and
// returned without being stored, so each read computes it again until a
// writer stores it (the next change's sweep, `daybook fleet rebuild`, a
// FleetSummary).
func (l Fleet) FleetSummaryReadOnly(ctx context.Context, accountID string) (Summary, error) {
	return l.fleetSummary(ctx, accountID, false)
}

func (l Fleet) fleetSummary(ctx context.Context, accountID string, store bool) (Summary, error) {
	if accountID == "" || strings.Contains(accountID, "#") {
		return Summary{}, fmt.Errorf("ledger: account id %q", accountID)
	}
	item, err := l.getItem(ctx, tableKey(summaryPK(accountID), skSummary))
	if errors.Is(err, ErrNotFound) {
		asOf := l.cfg.Now().UTC()
		a, err := l.accounts().GetAccount(ctx, accountID)
		if err != nil {
			return Summary{}, err
		}
		if store {
			return l.refresh(ctx, a, asOf)
		}
		sum, _, err := l.summarize(ctx, a, asOf)
		return sum, err
	}
	if err != nil {
		return Summary{}, err
	}
	if _, ok := item[AttrFleetShard]; !ok {
		return Summary{}, fmt.Errorf("%w: account %s", ErrNotFound, accountID)
	}
	return summaryFromItem(item)
}

func summaryFromItem(item map[string]types.AttributeValue) (Summary, error) {
	rec, err := decodeItem[summaryRecord](item)
	if err != nil {
		return Summary{}, err
	}
	var sum Summary
	if err := json.Unmarshal([]byte(rec.Doc), &sum); err != nil {
		return Summary{}, fmt.Errorf("ledger: %s/%s: attribute %s: %w", rec.PK, rec.SK, attrDoc, err)
	}
	if sum.Counts == nil {
		sum.Counts = map[string]int{}
	}
	return sum, nil
}
