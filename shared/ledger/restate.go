package ledger

// Late data: restatement checks.
//
// The exporter takes a fingerprint of the day in the source (a hash of the
// dataset's fingerprint query, source.Fingerprinter) right before it reads
// the rows, and Complete stores it with the generation:
//
//	partition row:  fingerprint, fingerprint_at          what the generation was exported with
//	                restate_account, restate_key         while its next check is scheduled
//	                restated_from, restated_rows         while the generation restates an earlier one
//
// The sparse GSI `restate` (hash restate_account, range restate_key =
// <check_at>#<day>#<dataset>) holds only completed rows of recently closed
// days whose fingerprint is to be compared again; a row leaves it when its
// day leaves the lookback window (DropRestateCheck) and whenever it is
// completed again without a check to schedule. It is sharded like the fleet
// index: restate_account (the attribute keeps the name it had when the
// index was per account, so the deployed index needs no rebuild) holds
// R#<nn>, nn = Shard(account). The sweeper reads it with one key-condition
// Query per shard (restate_key <= now), never a Scan and never a listing of
// the accounts, so an idle fleet costs FleetShards queries whatever its
// size; it
// moves each row's next check Interval ahead with a conditional write
// (MoveRestateCheck, so a check is queued once per interval whatever the
// number of sweeps), and queues a check message. The exporter runs the
// fingerprint query again and, if the hash differs, RequeueRestatement
// queues the partition (reason restatement) with a conditional write on the
// generation and the fingerprint it compared: a restatement never races a
// newer export. The next sweep claims it like any queued row and the new
// generation replaces the day as a manual re-export does.
//
// The index is independent of the due index and of how a sweep picks the
// accounts it visits: its cost is one Query per shard, bounded by the
// per-sweep cap, and it reads nothing but rows whose check is due.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/envvar"
	"github.com/daybook-dev/daybook/shared/partition"
)

// Fingerprint is a generation's fingerprint of its day in the source.
type Fingerprint struct {
	// Value is the hex hash (source.Fingerprinter); "" when none was taken.
	Value string
	// At is when it was taken, right before the rows were read.
	At time.Time
	// CheckAt is when the restatement check compares it again; zero when it
	// is not scheduled (no value, or the day outside the lookback window).
	CheckAt time.Time
}

// Restatement is what a restated generation replaced.
type Restatement struct {
	PreviousGeneration int64
	PreviousRows       int64
}

// Restating reports whether the row was queued for a restatement and no
// generation was committed since: its next run restates the day.
func (r Row) Restating() bool {
	return r.Restatement != nil && r.Restatement.PreviousGeneration == r.Generation
}

// Restated returns what the row's committed generation restated, or nil
// when it is not a restatement.
func (r Row) Restated() *Restatement {
	if r.Restatement == nil || r.Restatement.PreviousGeneration >= r.Generation {
		return nil
	}
	return r.Restatement
}

// RestateConfig bounds the restatement checks of a deployment.
type RestateConfig struct {
	// LookbackDays is how many of an account's most recently closed days
	// are checked; 0 turns the checks off.
	LookbackDays int
	// Interval is the least time between two checks of one partition.
	Interval time.Duration
	// PerSweepCap is the most checks one sweep queues (the sweeper's).
	PerSweepCap int
}

// RestateConfigFromEnv reads RESTATE_LOOKBACK_DAYS, RESTATE_INTERVAL and
// RESTATE_PER_SWEEP_CAP; problems are collected in r, naming the variable.
func RestateConfigFromEnv(r *envvar.Reader) RestateConfig {
	return RestateConfig{LookbackDays: r.RestateLookbackDays(), Interval: r.RestateInterval(), PerSweepCap: r.RestatePerSweepCap()}
}

// Enabled reports whether days are checked at all.
func (c RestateConfig) Enabled() bool { return c.LookbackDays > 0 && c.Interval > 0 }

// Window is the days checked for an account whose last closed day is
// closed: the LookbackDays days ending with it.
func (c RestateConfig) Window(closed civil.Date) (from, to civil.Date) {
	return closed.AddDays(1 - max(c.LookbackDays, 1)), closed
}

// InWindow reports whether day is checked, closed being the account's last
// closed day.
func (c RestateConfig) InWindow(day, closed civil.Date) bool {
	from, to := c.Window(closed)
	return c.Enabled() && !day.Before(from) && !day.After(to)
}

// CheckAt is when a generation of day exported at now is next checked: now
// plus the interval, or zero when day is outside the window.
func (c RestateConfig) CheckAt(day, closed civil.Date, now time.Time) time.Time {
	if !c.InWindow(day, closed) {
		return time.Time{}
	}
	return now.Add(c.Interval).UTC().Truncate(time.Second)
}

// restateShard is the restate index's partition key of the accounts of a
// fleet shard.
func restateShard(shard int) string { return fmt.Sprintf("%s%02d", restateShardPrefix, shard) }

const restateShardPrefix = "R#"

func restateKey(at time.Time, day civil.Date, dataset string) string {
	return fmtTime(at) + "#" + day.String() + "#" + dataset
}

// withLateData adds what a completed generation records about late data
// and reseeds to Complete's update: the fingerprint and the next check
// (or removes stale ones), the restatement it made (or removes the marks
// of one it did not make), and its seed epoch.
func (res Result) withLateData(u expression.UpdateBuilder, key partition.Key) expression.UpdateBuilder {
	fp := res.Fingerprint
	if fp.Value != "" {
		u = u.Set(name(attrFingerprint), val(fp.Value)).Set(name(attrFingerprintAt), val(fmtTime(fp.At)))
	} else {
		u = u.Remove(name(attrFingerprint)).Remove(name(attrFingerprintAt))
	}
	if fp.Value != "" && !fp.CheckAt.IsZero() {
		u = u.Set(name(AttrRestateAccount), val(restateShard(Shard(key.AccountID)))).
			Set(name(AttrRestateKey), val(restateKey(fp.CheckAt, key.Day, key.Dataset)))
	} else {
		u = u.Remove(name(AttrRestateAccount)).Remove(name(AttrRestateKey))
	}
	if !res.Restated {
		u = u.Remove(name(attrRestatedFrom)).Remove(name(attrRestatedRows))
	}
	if res.SeedEpoch > 0 {
		u = u.Set(name(attrSeedEpoch), val(res.SeedEpoch))
	}
	return u
}

// readLateData fills the late-data fields of row from its stored record.
func readLateData(row *Row, r rowRecord, item map[string]types.AttributeValue) error {
	row.SeedEpoch = r.SeedEpoch
	row.Fingerprint.Value = r.Fingerprint
	var err error
	if row.Fingerprint.At, err = parseTime(r.FingerprintAt); err != nil {
		return malformed(item, attrFingerprintAt, strconv.Quote(r.FingerprintAt), err)
	}
	if r.RestateKey != "" {
		ts, rest, ok := strings.Cut(r.RestateKey, "#")
		at, err := parseTime(ts)
		if err == nil && (!ok || at.IsZero() || rest == "") {
			err = errors.New("want <time>#<day>#<dataset>")
		}
		if err != nil {
			return malformed(item, AttrRestateKey, strconv.Quote(r.RestateKey), err)
		}
		row.Fingerprint.CheckAt = at
	}
	if r.RestatedFrom > 0 {
		row.Restatement = &Restatement{PreviousGeneration: r.RestatedFrom, PreviousRows: r.RestatedRows}
	}
	return nil
}

// RestateDue returns up to limit rows of the accounts of fleet shard
// (Shard) whose restatement check is due (restate_key <= now), oldest check
// first: one key-condition Query on the restate index, no filter. Index
// items carry the key, state, generation and the check time
// (Fingerprint.CheckAt).
func (l Restates) RestateDue(ctx context.Context, shard, limit int) ([]Row, ReadStats, error) {
	if limit <= 0 {
		return nil, ReadStats{}, nil
	}
	if shard < 0 || shard >= FleetShards {
		return nil, ReadStats{}, fmt.Errorf("ledger: restate checks: shard %d out of 0..%d", shard, FleetShards-1)
	}
	kc := expression.Key(AttrRestateAccount).Equal(val(restateShard(shard))).
		And(expression.Key(AttrRestateKey).LessThanEqual(val(fmtTime(l.now()) + dueUpperBound)))
	var rows []Row
	stats, err := l.queryPages(ctx, fmt.Sprint("restate checks of shard ", shard), IndexRestate, kc, "", limit, appendRows(&rows))
	return rows, stats, err
}

// MoveRestateCheck schedules the next check of a row read by RestateDue at
// next, conditional on the row being as read: the same scheduled check,
// completed, the same generation. A sweep calls it before it queues a
// check, so a check is queued once whatever the number of sweeps; a row
// that changed meanwhile is ErrConflict.
func (l Restates) MoveRestateCheck(ctx context.Context, r Row, next time.Time) error {
	if err := validateKey(r.Key); err != nil {
		return err
	}
	if r.Fingerprint.CheckAt.IsZero() || next.IsZero() {
		return fmt.Errorf("ledger: move restate check of %s: check time %s, next %s", r.Key, fmtTime(r.Fingerprint.CheckAt), fmtTime(next))
	}
	upd := expression.Set(name(AttrRestateKey), val(restateKey(next, r.Day, r.Dataset)))
	cond := expression.And(name(AttrRestateKey).Equal(val(restateKey(r.Fingerprint.CheckAt, r.Day, r.Dataset))),
		name(attrState).Equal(val(string(StateCompleted))), name(attrGeneration).Equal(val(r.Generation)))
	_, err := l.update(ctx, rowKey(r.Key), upd, cond, types.ReturnValueNone)
	if errors.Is(err, errCondition) {
		return fmt.Errorf("%w: %s changed since its restate check was read", ErrConflict, r.Key)
	}
	return err
}

// DropRestateCheck takes a row read by RestateDue out of the restate index
// (its day left the lookback window, or it is no longer completed),
// conditional on the same scheduled check; a row that changed meanwhile is
// ErrConflict. Completing the row again schedules a new check.
func (l Restates) DropRestateCheck(ctx context.Context, r Row) error {
	if err := validateKey(r.Key); err != nil {
		return err
	}
	upd := expression.Remove(name(AttrRestateAccount)).Remove(name(AttrRestateKey))
	cond := name(AttrRestateKey).Equal(val(restateKey(r.Fingerprint.CheckAt, r.Day, r.Dataset)))
	_, err := l.update(ctx, rowKey(r.Key), upd, cond, types.ReturnValueNone)
	if errors.Is(err, errCondition) {
		return fmt.Errorf("%w: %s changed since its restate check was read", ErrConflict, r.Key)
	}
	return err
}

// RequeueRestatement queues a completed partition whose day changed in the
// source since it was exported: conditional on the row still being
// completed at generation with the fingerprint exported (what the check
// compared), it becomes queued with reason restatement and a fresh attempt
// count, remembers the generation and rows it replaces (restated_from,
// restated_rows) and leaves the restate index. A row that moved on (a newer
// export, a manual request, a running claim) is ErrConflict and is left
// alone: whatever runs next reads the source as it is now.
func (l Restates) RequeueRestatement(ctx context.Context, key partition.Key, generation int64, exported string) (Row, error) {
	if err := validateKey(key); err != nil {
		return Row{}, err
	}
	switch {
	case generation < 1:
		return Row{}, fmt.Errorf("ledger: requeue restatement of %s: generation %d (want >= 1)", key, generation)
	case exported == "":
		return Row{}, fmt.Errorf("ledger: requeue restatement of %s: the exported fingerprint is empty", key)
	}
	nowS := fmtTime(l.now())
	upd := expression.Set(name(attrState), val(string(StateQueued))).
		Set(name(attrReason), val(string(partition.ReasonRestatement))).
		Set(name(attrAttempts), val(0)).
		Set(name(attrRestatedFrom), val(generation)).
		Set(name(attrRestatedRows), name(attrRows)).
		Set(name(AttrDueAccount), val(key.AccountID)).
		Set(name(AttrDueKey), val(dueKey(StateQueued, key.Day, key.Dataset, time.Time{}))).
		Set(name(attrUpdatedAt), val(nowS)).
		Remove(name(AttrRestateAccount)).Remove(name(AttrRestateKey)).Remove(name(attrRequestedBy)).
		Remove(name(attrClaimToken)).Remove(name(attrLeaseUntil)).Remove(name(attrNextAttemptAt)).
		Remove(name(attrStopped)).Remove(name(attrRerunRequested)).Remove(name(attrStartedAt))
	cond := expression.And(name(attrState).Equal(val(string(StateCompleted))),
		name(attrGeneration).Equal(val(generation)), name(attrFingerprint).Equal(val(exported)))
	out, err := l.transition(ctx, key, upd, cond, types.ReturnValueAllNew)
	if errors.Is(err, errCondition) {
		if len(out) == 0 {
			return Row{}, fmt.Errorf("%w: requeue restatement of %s: no such row", ErrNotFound, key)
		}
		row, rerr := rowFromItem(out)
		if rerr != nil {
			return Row{}, fmt.Errorf("%w: requeue restatement of %s: %w", ErrConflict, key, rerr)
		}
		return Row{}, fmt.Errorf("%w: requeue restatement of %s: the row is %s at generation %d (checked generation %d)",
			ErrConflict, key, row.State, row.Generation, generation)
	}
	if err != nil {
		return Row{}, err
	}
	row, err := readBack("requeue restatement", key, out)
	if err != nil {
		return Row{}, err
	}
	// The row is due now: wake the account (after the row, like Requeue).
	l.wakeAfter(ctx, key.AccountID, l.now())
	return row, nil
}

// ShardRestateChecks moves accountID's restatement checks written before
// the restate index was sharded (restate_account = the account id, which
// no sweep reads) to the account's shard, and returns how many it moved:
// one Query of the index under the account id (nothing, once moved), and
// a conditional write per check. daybook fleet rebuild runs it for every
// account, once after the upgrade.
func (l Restates) ShardRestateChecks(ctx context.Context, accountID string) (int, error) {
	if accountID == "" || strings.Contains(accountID, "#") {
		return 0, fmt.Errorf("ledger: account id %q", accountID)
	}
	var rows []Row
	kc := expression.Key(AttrRestateAccount).Equal(val(accountID))
	if _, err := l.queryPages(ctx, "unsharded restate checks of "+accountID, IndexRestate, kc, "", 0, appendRows(&rows)); err != nil {
		return 0, err
	}
	moved := 0
	for _, r := range rows {
		upd := expression.Set(name(AttrRestateAccount), val(restateShard(Shard(accountID))))
		_, err := l.update(ctx, rowKey(r.Key), upd, name(AttrRestateAccount).Equal(val(accountID)), types.ReturnValueNone)
		switch {
		case err == nil:
			moved++
		case !errors.Is(err, errCondition): // changed meanwhile: rewritten by its own transition
			return moved, err
		}
	}
	return moved, nil
}
