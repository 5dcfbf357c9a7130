package ledger

// Slices of a partition. A day too large for one exporter run is
// split into slices that run on separate invocations, in parallel, under
// the partition's one claim:
//
//   - the run that started the partition (its claim token) plans the
//     slices: PlanSlices writes a plan item and one item per slice, under
//     pk=SL#<account>#<dataset>#<day> (sk=PLAN, sk=S#<nnnn>);
//   - each slice is claimed, leased, retried and recorded like a
//     partition: StartSlice claims it with a token of its own (counting an
//     attempt; a running slice whose lease expired is taken over),
//     CompleteSlice records its files, FailSlice its error; after
//     MaxAttempts it is stopped and the partition's attempt fails;
//   - every slice run is conditional on the partition still being held by
//     the planning claim (StartSlice, CompleteSlice and FailSlice renew it
//     under that token; the slice items carry it), and holds it for
//     SliceHold (a lease plus the queue's redelivery delay), so the
//     partition stays running while its slices make progress or wait to be
//     delivered again, and a dead plan's hold expires like any dead claim
//     (the sweeper reclaims it and the next run plans again);
//   - a new run of the partition writes nothing while a slice of an
//     earlier plan may still be running (SliceFence): its lease bounds it;
//   - once every slice is completed, one of them wins ClaimSliceCommit and
//     commits the partition, once, through Complete under the partition's
//     claim.
//
// Slice items expire (expires_at) a month after they are written.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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
	pkSlicePrefix = "SL#"
	skSlicePlan   = "PLAN"
	skSlicePrefix = "S#"
	sliceLifetime = 30 * 24 * time.Hour
	// attrSlicePlanned is on a partition row a plan was ever recorded for
	// (Row.SlicePlanned).
	attrSlicePlanned = "slice_planned"
	// The slice items' ranges (unix microseconds; PlanSlices).
	attrSliceFromUS   = "slice_from_us"   // slice items: the range's start, none at the window's
	attrSliceToUS     = "slice_to_us"     // slice items: the range's end, none at the window's
	attrSliceBoundsUS = "slice_bounds_us" // slice plans: every bound
)

// SlicePlan is a partition's plan for one sliced generation.
type SlicePlan struct {
	partition.Key
	// Token is the partition's claim token: the plan and its slices live as
	// long as that claim holds the partition.
	Token      string
	Generation int64
	Slices     int
	// Bounds are the Slices-1 instants that cut the day's window into the
	// slices' ranges, strictly increasing: slice i is [Bounds[i-1],
	// Bounds[i]), the first starting and the last ending at the window's
	// edges. Found from the rows (source.Slicer); nil slices the window
	// into equal time ranges. Each slice item stores its own range, so a
	// retry of a slice reads exactly what its first attempt read.
	Bounds    []time.Time
	RunID     string
	StartedAt time.Time
	// ExpectedRows is the size the plan was made for.
	ExpectedRows int64
	// Destination names where the plan's files go (the exporter's key of
	// the account's bucket, prefix and format); a slice or a commit that
	// finds the account's destination changed fails the plan.
	Destination string
	// Fingerprint is the source's fingerprint taken before any slice read
	// a row; the committed generation is checked for late data against it.
	Fingerprint Fingerprint
	// CommitToken and CommitLeaseUntil: the slice run committing the
	// partition (ClaimSliceCommit).
	CommitToken      string
	CommitLeaseUntil time.Time
}

// Slice is one slice of a planned partition.
type Slice struct {
	partition.Key
	Index int
	// From and To are the slice's range from the plan's Bounds, zero at
	// the window's edge; both zero in a plan of equal time ranges.
	From, To time.Time
	// Slices, Generation and Destination are the plan's.
	Slices      int
	Generation  int64
	Destination string
	// Token is the partition's claim token; RunToken the slice run's own.
	Token      string
	RunToken   string
	State      State // queued, running, completed or failed
	Attempts   int
	Stopped    bool
	StartedAt  time.Time
	LeaseUntil time.Time
	FinishedAt time.Time
	LastError  string
	Rows       int64
	Bytes      int64
	// Files is the exporter's record of the slice's data files, opaque here.
	Files string
}

// SliceResult is what a completed slice records.
type SliceResult struct {
	Rows, Bytes int64
	Files       string
}

// sliceRecord is the stored form of a plan (sk=PLAN) and of a slice
// (sk=S#<nnnn>).
type sliceRecord struct {
	PK               string  `dynamodbav:"pk"`
	SK               string  `dynamodbav:"sk"`
	AccountID        string  `dynamodbav:"account_id"`
	Dataset          string  `dynamodbav:"dataset"`
	Day              string  `dynamodbav:"day"`
	PartitionToken   string  `dynamodbav:"partition_token"`
	Slice            int     `dynamodbav:"slice_index"`
	Slices           int     `dynamodbav:"slice_count"`
	SliceFromUS      int64   `dynamodbav:"slice_from_us,omitempty"` // unix microseconds; none: the window's start
	SliceToUS        int64   `dynamodbav:"slice_to_us,omitempty"`   // none: the window's end
	SliceBoundsUS    []int64 `dynamodbav:"slice_bounds_us,omitempty"`
	Generation       int64   `dynamodbav:"generation,omitempty"`
	RunID            string  `dynamodbav:"run_id,omitempty"`
	ExpectedRows     int64   `dynamodbav:"expected_rows,omitempty"`
	Destination      string  `dynamodbav:"destination,omitempty"`
	Fingerprint      string  `dynamodbav:"fingerprint,omitempty"`
	FingerprintAt    string  `dynamodbav:"fingerprint_at,omitempty"`
	CommitToken      string  `dynamodbav:"commit_token,omitempty"`
	CommitLeaseUntil string  `dynamodbav:"commit_lease_until,omitempty"`
	State            string  `dynamodbav:"state,omitempty"`
	ClaimToken       string  `dynamodbav:"claim_token,omitempty"`
	WriteID          string  `dynamodbav:"write_id,omitempty"` // the last conditional update's (kernel.update)
	Attempts         int     `dynamodbav:"attempts"`
	StartedAt        string  `dynamodbav:"started_at,omitempty"`
	LeaseUntil       string  `dynamodbav:"lease_until,omitempty"`
	FinishedAt       string  `dynamodbav:"finished_at,omitempty"`
	LastError        string  `dynamodbav:"last_error,omitempty"`
	Rows             int64   `dynamodbav:"rows"`
	Bytes            int64   `dynamodbav:"bytes"`
	SliceFiles       string  `dynamodbav:"slice_files,omitempty"`
	UpdatedAt        string  `dynamodbav:"updated_at"`
	ExpiresAt        int64   `dynamodbav:"expires_at"`
}

func slicePK(k partition.Key) string {
	return pkSlicePrefix + k.AccountID + "#" + k.Dataset + "#" + k.Day.String()
}

func sliceSK(i int) string { return fmt.Sprintf("%s%04d", skSlicePrefix, i) }

func sliceKey(k partition.Key, i int) map[string]types.AttributeValue {
	return tableKey(slicePK(k), sliceSK(i))
}

func planKey(k partition.Key) map[string]types.AttributeValue {
	return tableKey(slicePK(k), skSlicePlan)
}

// PlanSlices records a plan of p.Slices slices of p.Generation, all queued,
// under the partition's claim p.Token, replacing any plan an earlier claim
// left. A claim that no longer holds the partition is ErrClaimLost and
// nothing is written.
func (l Slices) PlanSlices(ctx context.Context, p SlicePlan) error {
	if err := validateKey(p.Key); err != nil {
		return err
	}
	if p.Slices < 2 || p.Slices > partition.MaxSlices {
		return fmt.Errorf("ledger: plan %s: slices %d: want 2 to %d", p.Key, p.Slices, partition.MaxSlices)
	}
	if p.Generation < 1 || p.Token == "" {
		return fmt.Errorf("ledger: plan %s: generation %d, token %q", p.Key, p.Generation, p.Token)
	}
	if err := p.checkBounds(); err != nil {
		return err
	}
	// The row is marked before any slice exists: a later run of the
	// partition reads SliceFence only for a row so marked.
	if err := l.holdPartition(ctx, p.Key, p.Token, true); err != nil {
		return fmt.Errorf("plan %s: %w", p.Key, err)
	}
	// The plan is on record under its token before any slice message
	// carries it (token.go).
	if err := l.issuePlanToken(ctx, p); err != nil {
		return err
	}
	now := l.now()
	base := sliceRecord{PK: slicePK(p.Key), AccountID: p.AccountID, Dataset: p.Dataset, Day: p.Day.String(),
		PartitionToken: p.Token, Slices: p.Slices, Generation: p.Generation, Destination: p.Destination, UpdatedAt: fmtTime(now),
		ExpiresAt: now.Add(sliceLifetime).Unix()}
	plan := base
	plan.SK = skSlicePlan
	plan.Slice = -1
	plan.RunID = p.RunID
	plan.ExpectedRows = p.ExpectedRows
	plan.Fingerprint = p.Fingerprint.Value
	if !p.Fingerprint.At.IsZero() {
		plan.FingerprintAt = fmtTime(p.Fingerprint.At)
	}
	plan.StartedAt = fmtTime(p.StartedAt)
	for _, b := range p.Bounds {
		plan.SliceBoundsUS = append(plan.SliceBoundsUS, b.UnixMicro())
	}
	// The slices first, the plan last: a plan item names a complete plan.
	for i := range p.Slices {
		r := base
		r.SK = sliceSK(i)
		r.Slice = i
		r.State = string(StateQueued)
		if len(p.Bounds) > 0 {
			if i > 0 {
				r.SliceFromUS = p.Bounds[i-1].UnixMicro()
			}
			if i < len(p.Bounds) {
				r.SliceToUS = p.Bounds[i].UnixMicro()
			}
		}
		if err := l.putSlice(ctx, r); err != nil {
			return err
		}
	}
	return l.putSlice(ctx, plan)
}

// checkBounds refuses bounds that do not cut the plan into its slices:
// Slices-1 of them, strictly increasing, in whole microseconds.
func (p SlicePlan) checkBounds() error {
	if len(p.Bounds) == 0 {
		return nil
	}
	if len(p.Bounds) != p.Slices-1 {
		return fmt.Errorf("ledger: plan %s: %d bounds for %d slices, want %d", p.Key, len(p.Bounds), p.Slices, p.Slices-1)
	}
	for i, b := range p.Bounds {
		switch {
		case b.UnixMicro() <= 0 || !b.Equal(time.UnixMicro(b.UnixMicro())):
			return fmt.Errorf("ledger: plan %s: bounds[%d] %s: want a whole microsecond after 1970", p.Key, i, b.Format(time.RFC3339Nano))
		case i > 0 && !b.After(p.Bounds[i-1]):
			return fmt.Errorf("ledger: plan %s: bounds[%d] %s is not after bounds[%d] %s", p.Key, i, b.Format(time.RFC3339Nano), i-1, p.Bounds[i-1].Format(time.RFC3339Nano))
		}
	}
	return nil
}

func (l *kernel) putSlice(ctx context.Context, r sliceRecord) error {
	item, err := attributevalue.MarshalMap(r)
	if err != nil {
		return fmt.Errorf("ledger: encode %s/%s: %w", r.PK, r.SK, err)
	}
	if _, err := l.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(l.cfg.Table), Item: item}); err != nil {
		return fmt.Errorf("ledger: put %s/%s: %w", r.PK, r.SK, err)
	}
	return nil
}

// SlicesOf reads a partition's plan and its slices in order (strongly
// consistent). No plan is ErrNotFound.
func (l Slices) SlicesOf(ctx context.Context, key partition.Key) (SlicePlan, []Slice, error) {
	plan, sls, err := l.sliceItems(ctx, key)
	if err != nil {
		return SlicePlan{}, nil, err
	}
	if plan == nil {
		return SlicePlan{}, nil, fmt.Errorf("%w: no slice plan for %s", ErrNotFound, key)
	}
	// Slices of the plan only, in order: items of an earlier plan with
	// more slices may remain until they expire.
	var mine []Slice
	for _, sl := range sls {
		if sl.Token == plan.Token && sl.Index < plan.Slices {
			mine = append(mine, sl)
		}
	}
	return *plan, mine, nil
}

// PlanOf reads a partition's slice plan alone, without its slices
// (strongly consistent). No plan is ErrNotFound.
func (l Slices) PlanOf(ctx context.Context, key partition.Key) (SlicePlan, error) {
	if err := validateKey(key); err != nil {
		return SlicePlan{}, err
	}
	item, err := l.getItem(ctx, planKey(key))
	if errors.Is(err, ErrNotFound) {
		return SlicePlan{}, fmt.Errorf("%w: no slice plan for %s", ErrNotFound, key)
	}
	if err != nil {
		return SlicePlan{}, err
	}
	return planFromItem(item)
}

// SliceFence returns until when a slice run may still be writing into the
// partition (a run need not ask for a row that is not Row.SlicePlanned:
// no slice of it ever existed), unless it belongs to the plan of the claim token (pass "" for
// every plan): the latest lease of a running slice, zero if none. A run of
// the partition starts writing only after it: the claim that held the
// partition before is gone, but its slices may outlive it up to their
// leases, and no new one can start (StartSlice needs that claim).
func (l Slices) SliceFence(ctx context.Context, key partition.Key, token string) (time.Time, error) {
	_, sls, err := l.sliceItems(ctx, key)
	if err != nil {
		return time.Time{}, err
	}
	now := l.now()
	var until time.Time
	for _, sl := range sls {
		if (token == "" || sl.Token != token) && sl.State == StateRunning && !sl.LeaseUntil.Before(now) && sl.LeaseUntil.After(until) {
			until = sl.LeaseUntil
		}
	}
	return until, nil
}

// sliceItems reads every slice item of the partition (strongly
// consistent): its plan (nil if none) and its slices, any plan's, in order.
func (l *kernel) sliceItems(ctx context.Context, key partition.Key) (*SlicePlan, []Slice, error) {
	if err := validateKey(key); err != nil {
		return nil, nil, err
	}
	kc := expression.Key(AttrPK).Equal(expression.Value(slicePK(key)))
	expr, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return nil, nil, fmt.Errorf("ledger: slices of %s: %w", key, err)
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(l.cfg.Table), KeyConditionExpression: expr.KeyCondition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(), ConsistentRead: aws.Bool(true),
	}
	var (
		plan *SlicePlan
		sls  []Slice
	)
	for {
		out, err := l.db.Query(ctx, in)
		if err != nil {
			return nil, nil, fmt.Errorf("ledger: slices of %s: %w", key, err)
		}
		for _, it := range out.Items {
			if avString(it[AttrSK]) == skSlicePlan {
				p, err := planFromItem(it)
				if err != nil {
					return nil, nil, err
				}
				plan = &p
				continue
			}
			sl, err := sliceFromItem(it)
			if err != nil {
				return nil, nil, err
			}
			sls = append(sls, sl)
		}
		if len(out.LastEvaluatedKey) == 0 {
			return plan, sls, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// Done reports whether every slice of plan is completed (sls as SlicesOf
// returns them).
func (p SlicePlan) Done(sls []Slice) bool {
	if len(sls) != p.Slices {
		return false
	}
	for i, sl := range sls {
		if sl.Index != i || sl.State != StateCompleted {
			return false
		}
	}
	return true
}

// decodeSlice reads a slice item's stored form and its partition key;
// every malformed value is an error naming the attribute (decodeItem).
func decodeSlice(item map[string]types.AttributeValue) (sliceRecord, partition.Key, error) {
	r, err := decodeItem[sliceRecord](item)
	if err != nil {
		return r, partition.Key{}, err
	}
	day, err := civil.Parse(r.Day)
	if err != nil {
		return r, partition.Key{}, malformed(item, attrDay, strconv.Quote(r.Day), err)
	}
	return r, partition.Key{AccountID: r.AccountID, Dataset: r.Dataset, Day: day}, nil
}

// sliceTime is one stored time of a slice item and where it goes.
type sliceTime struct {
	attr, value string
	dst         *time.Time
}

func parseTimes(item map[string]types.AttributeValue, ts ...sliceTime) error {
	for _, t := range ts {
		var err error
		if *t.dst, err = parseTime(t.value); err != nil {
			return malformed(item, t.attr, strconv.Quote(t.value), err)
		}
	}
	return nil
}

func planFromItem(item map[string]types.AttributeValue) (SlicePlan, error) {
	r, k, err := decodeSlice(item)
	if err != nil {
		return SlicePlan{}, err
	}
	p := SlicePlan{Key: k, Token: r.PartitionToken, Generation: r.Generation, Slices: r.Slices, RunID: r.RunID, Destination: r.Destination,
		ExpectedRows: r.ExpectedRows, CommitToken: r.CommitToken, Fingerprint: Fingerprint{Value: r.Fingerprint}}
	for _, us := range r.SliceBoundsUS {
		p.Bounds = append(p.Bounds, time.UnixMicro(us).UTC())
	}
	return p, parseTimes(item, sliceTime{attrStartedAt, r.StartedAt, &p.StartedAt}, sliceTime{attrFingerprintAt, r.FingerprintAt, &p.Fingerprint.At},
		sliceTime{attrCommitLeaseUntil, r.CommitLeaseUntil, &p.CommitLeaseUntil})
}

func sliceFromItem(item map[string]types.AttributeValue) (Slice, error) {
	r, k, err := decodeSlice(item)
	if err != nil {
		return Slice{}, err
	}
	if idx, err := strconv.Atoi(strings.TrimPrefix(r.SK, skSlicePrefix)); err != nil || idx != r.Slice {
		return Slice{}, malformed(item, attrSlice, strconv.Itoa(r.Slice), fmt.Errorf("the key names slice %q", r.SK))
	}
	sl := Slice{Key: k, Index: r.Slice, Slices: r.Slices, Generation: r.Generation, Destination: r.Destination, Token: r.PartitionToken,
		RunToken: r.ClaimToken, State: State(r.State), Attempts: r.Attempts, LastError: r.LastError, Rows: r.Rows, Bytes: r.Bytes, Files: r.SliceFiles}
	if r.SliceFromUS != 0 {
		sl.From = time.UnixMicro(r.SliceFromUS).UTC()
	}
	if r.SliceToUS != 0 {
		sl.To = time.UnixMicro(r.SliceToUS).UTC()
	}
	return sl, parseTimes(item, sliceTime{attrStartedAt, r.StartedAt, &sl.StartedAt}, sliceTime{attrLeaseUntil, r.LeaseUntil, &sl.LeaseUntil},
		sliceTime{attrFinishedAt, r.FinishedAt, &sl.FinishedAt})
}
