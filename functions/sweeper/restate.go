package main

// Restatement checks (late data). After each sweep the sweeper queues
// restate_check messages for completed partitions of recently closed days
// whose fingerprint is due to be compared again (the exporter, which has
// the source, compares it; the sweeper never touches the source). The pass
// is bounded three ways: it reads only the sparse restate index (one
// key-condition Query per account visited, never a Scan), each partition is
// checked at most once per interval (MoveRestateCheck, a conditional write,
// before its message is sent), and at most PerSweepCap checks are queued
// per sweep, accounts taken in a rotating order so every account's checks
// come round. It lists the accounts itself: which accounts a sweep wakes
// for due work has no say in which are checked for late data.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/metrics"
)

// RestateLedger is what the restatement pass needs from the ledger.
type RestateLedger interface {
	ListAccounts(ctx context.Context) ([]account.Account, error)
	RestateDue(ctx context.Context, accountID string, limit int) ([]ledger.Row, ledger.ReadStats, error)
	MoveRestateCheck(ctx context.Context, r ledger.Row, next time.Time) error
	DropRestateCheck(ctx context.Context, r ledger.Row) error
}

var _ RestateLedger = (*ledger.Ledger)(nil)

// RestateConfig configures a Restater.
type RestateConfig struct {
	QueueURL string
	// Restate is the deployment's lookback, interval and per-sweep cap.
	Restate ledger.RestateConfig
	// DefaultSettleDelay applies to accounts that set none (SETTLE_DELAY).
	DefaultSettleDelay time.Duration
	Now                func() time.Time
	Log                *slog.Logger
}

// Restater queues restatement checks.
type Restater struct {
	Ledger RestateLedger
	SQS    SQSAPI
	Config RestateConfig
}

// RestateSummary describes one restatement pass.
type RestateSummary struct {
	Accounts  int  `json:"accounts"`   // enabled accounts whose due checks were read
	Due       int  `json:"due"`        // due checks read
	Sent      int  `json:"sent"`       // checks queued
	Dropped   int  `json:"dropped"`    // rows taken out of the restate index: day outside the window, not completed, dataset not exported
	Skipped   int  `json:"skipped"`    // rows that changed after they were read
	Capped    bool `json:"capped"`     // the per-sweep cap ended the pass
	ItemsRead int  `json:"items_read"` // items read from the table and index
	Errors    int  `json:"errors"`
}

// Run performs one restatement pass; problems with one account or row are
// counted and joined into the error, and do not stop it.
func (r *Restater) Run(ctx context.Context) (sum RestateSummary, err error) {
	c := r.Config
	if !c.Restate.Enabled() {
		return sum, nil
	}
	if c.Restate.PerSweepCap < 1 || c.QueueURL == "" {
		return sum, fmt.Errorf("restate: per-sweep cap %d and queue URL %q", c.Restate.PerSweepCap, c.QueueURL)
	}
	now := time.Now()
	if c.Now != nil {
		now = c.Now()
	}
	var errs []error
	fail := func(err error) {
		sum.Errors++
		errs = append(errs, err)
	}
	accounts, err := r.Ledger.ListAccounts(ctx)
	switch {
	case errors.Is(err, ledger.ErrMalformed):
		// An account record that cannot be read does not hide the others
		// (ListAccounts returns them); the sweep reports it, naming it, so
		// the pass only notes that it skipped it.
		if c.Log != nil {
			c.Log.WarnContext(ctx, "restatement pass skipped unreadable account records", "error", err.Error())
		}
	case err != nil:
		return sum, fmt.Errorf("restate: %w", err)
	}
	sum.ItemsRead += len(accounts)
	var enabled []account.Account
	for _, a := range accounts {
		if a.Enabled {
			enabled = append(enabled, a.WithDefaults(c.DefaultSettleDelay))
		}
	}
	next := now.Add(c.Restate.Interval)
	var checks []ledger.Row
	start := restateStart(now, len(enabled))
	for i := range enabled {
		if len(checks) >= c.Restate.PerSweepCap {
			sum.Capped = true
			break
		}
		a := enabled[(start+i)%len(enabled)]
		rows, stats, err := r.Ledger.RestateDue(ctx, a.ID, c.Restate.PerSweepCap-len(checks))
		sum.Accounts++
		sum.ItemsRead += stats.Items
		sum.Due += len(rows)
		if err != nil {
			fail(fmt.Errorf("account %s: restate checks: %w", a.ID, err))
			continue
		}
		closed := a.ClosedThrough(now)
		for _, row := range rows {
			if row.State != ledger.StateCompleted || !c.Restate.InWindow(row.Day, closed) || !exports(a, row.Dataset) {
				err = r.Ledger.DropRestateCheck(ctx, row)
				if err == nil {
					sum.Dropped++
				}
			} else if err = r.Ledger.MoveRestateCheck(ctx, row, next); err == nil {
				checks = append(checks, row)
			}
			switch {
			case errors.Is(err, ledger.ErrConflict):
				sum.Skipped++
			case err != nil:
				fail(fmt.Errorf("restate check %s: %w", row.Key, err))
			}
		}
	}
	sent, sendErrs := r.send(ctx, checks, next)
	sum.Sent = sent
	for _, err := range sendErrs {
		fail(err)
	}
	return sum, errors.Join(errs...)
}

// restateStart picks the account the pass starts from; it moves every
// minute, so the per-sweep cap does not always favour the same accounts.
func restateStart(now time.Time, n int) int {
	if n == 0 {
		return 0
	}
	return int(now.Unix()/60) % n
}

func exports(a account.Account, ds string) bool {
	for _, d := range a.Datasets {
		if d == ds {
			return true
		}
	}
	return false
}

// send queues the checks in batches of 10. A check whose message was not
// accepted is moved back to its old time, so the next sweep queues it.
func (r *Restater) send(ctx context.Context, checks []ledger.Row, next time.Time) (sent int, errs []error) {
	for lo := 0; lo < len(checks); lo += 10 {
		batch := checks[lo:min(lo+10, len(checks))]
		in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(r.Config.QueueURL)}
		for i, row := range batch {
			body, err := json.Marshal(jobs.RestateCheck{Kind: jobs.KindRestateCheck, AccountID: row.AccountID, Dataset: row.Dataset,
				Day: row.Day.String(), Generation: row.Generation})
			if err != nil {
				return sent, append(errs, err)
			}
			in.Entries = append(in.Entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(body))})
		}
		failed := map[int]string{}
		out, err := r.SQS.SendMessageBatch(ctx, in)
		if err != nil {
			for i := range batch {
				failed[i] = err.Error()
			}
		} else {
			ok := map[string]bool{}
			for _, e := range out.Successful {
				ok[aws.ToString(e.Id)] = true
			}
			for i := range batch {
				if !ok[strconv.Itoa(i)] {
					failed[i] = "not accepted"
				}
			}
			for _, f := range out.Failed {
				if i, err := strconv.Atoi(aws.ToString(f.Id)); err == nil && i >= 0 && i < len(batch) {
					failed[i] = aws.ToString(f.Code) + ": " + aws.ToString(f.Message)
				}
			}
		}
		sent += len(batch) - len(failed)
		for i, why := range failed {
			row := batch[i]
			moved := row
			moved.Fingerprint.CheckAt = next.UTC().Truncate(time.Second)
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			err := r.Ledger.MoveRestateCheck(rctx, moved, row.Fingerprint.CheckAt)
			cancel()
			errs = append(errs, fmt.Errorf("send restate check %s: %s", row.Key, why))
			if err != nil && !errors.Is(err, ledger.ErrConflict) {
				errs = append(errs, fmt.Errorf("restate check %s waits a full interval: %w", row.Key, err))
			}
		}
	}
	return sent, errs
}

// withRestate runs a restatement pass after each sweep: the Runner the
// handler gets. The sweep's summary is returned as it was; the pass's is
// logged and its checks counted (RestateChecksSent), and its errors join
// the sweep's, so a failing pass fails the invocation like a failing sweep.
type withRestate struct {
	Runner
	Restate *Restater
	Metrics *metrics.Emitter
	Log     *slog.Logger
}

func (w withRestate) Run(ctx context.Context) (Summary, error) {
	sum, err := w.Runner.Run(ctx)
	rs, rerr := w.Restate.Run(ctx)
	_ = w.Metrics.Emit(nil, metrics.Metric{Name: "RestateChecksSent", Unit: metrics.Count, Value: float64(rs.Sent)})
	if rerr != nil {
		w.Log.ErrorContext(ctx, "restatement checks finished with errors", "restate", rs, "error", rerr.Error())
		return sum, errors.Join(err, fmt.Errorf("restatement checks: %w", rerr))
	}
	w.Log.InfoContext(ctx, "restatement checks queued", "restate", rs)
	return sum, err
}
