package main

// Sweeper is the heart of the sweeper Lambda (SPEC S1–S4). Each run:
//
//  1. lists the accounts (one Query) and skips disabled ones;
//  2. per enabled account and dataset, materializes pending rows for every
//     closed day from max(watermark+1, start date) through
//     Account.ClosedThrough(now) — never today (L4) — with conditional puts,
//     then advances the watermark (conditional, forward only). The first sweep
//     after an account is added creates its whole backfill. The newest
//     closed day is materialized with reason "scheduled", older ones with
//     "backfill"; queued rows keep the reason they were queued with
//     (manual/backfill), failed rows and dead claims are claimed as "retry";
//  3. reads each account's due work from the sparse index, capped per account
//     (ledger.Due: queued, then pending and failed-and-due by day, then dead
//     claims; S1);
//  4. selects across accounts round-robin under the per-sweep cap, starting
//     from an account that rotates with the clock, so no account starves (S2);
//  5. claims each selected row (a conditional write; a race lost to another
//     sweep or a manual claim is skipped, not an error; S3) and sends the
//     claims as jobs in batches of 10. A claim whose message could not be sent
//     is released back to its due state; if the ledger refuses the release
//     because an exporter already started the job (SQS reported an error for
//     a message it had in fact accepted), the job counts as sent;
//  6. counts, per enabled account, the partitions that stopped retrying
//     (ledger.CountExhausted, the 9# class of the due index), so the
//     PartitionsExhausted metric is a level published every sweep (L1, O3).
//
// Running twice at once is safe (S4): materialization and the watermark are
// conditional, and two claims of one row cannot both succeed. A crash after
// a claim and before its send leaves a claim that dies with its lease and is
// reclaimed by a later sweep without having used an attempt (the ledger
// counts an attempt when a run starts).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// LedgerAPI is what the sweeper needs from the ledger.
type LedgerAPI interface {
	ListAccounts(ctx context.Context) ([]account.Account, error)
	Watermark(ctx context.Context, accountID, dataset string) (civil.Date, error)
	AdvanceWatermark(ctx context.Context, accountID, dataset string, through civil.Date) (bool, error)
	Materialize(ctx context.Context, accountID, dataset string, from, to civil.Date) (int, error)
	Due(ctx context.Context, accountID string, limit int) ([]ledger.Row, ledger.ReadStats, error)
	Claim(ctx context.Context, key ledger.Key, reason ledger.Reason) (ledger.Claim, error)
	Release(ctx context.Context, c ledger.Claim) error
	CountExhausted(ctx context.Context, accountID string) (int, ledger.ReadStats, error)
}

var _ LedgerAPI = (*ledger.Ledger)(nil)

// SQSAPI is what the sweeper needs from SQS.
type SQSAPI interface {
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

var _ SQSAPI = (*sqs.Client)(nil)

// SweepConfig configures a Sweeper.
type SweepConfig struct {
	QueueURL string
	// PerAccountCap is the most rows one account may have claimed per sweep.
	PerAccountCap int
	// PerSweepCap is the most rows claimed per sweep in total.
	PerSweepCap int
	// DefaultSettleDelay applies to accounts that set none (SETTLE_DELAY).
	DefaultSettleDelay time.Duration
	// ClaimConcurrency bounds parallel claims (default 8).
	ClaimConcurrency int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Log receives one line per problem (default slog.Default()).
	Log *slog.Logger
}

// Sweeper runs sweeps.
type Sweeper struct {
	Ledger LedgerAPI
	SQS    SQSAPI
	Config SweepConfig
}

// Job is the message the sweeper sends for a claimed partition; its shape
// belongs to package jobs, which the exporter parses with.
type Job = jobs.Job

// JobKind is Job.Kind.
const JobKind = jobs.KindJob

// Summary describes one sweep; it is logged and returned as JSON.
type Summary struct {
	Accounts       int `json:"accounts"`        // enabled accounts visited
	Materialized   int `json:"materialized"`    // rows created
	Due            int `json:"due"`             // due rows read (each account capped)
	Claimed        int `json:"claimed"`         // rows claimed
	Enqueued       int `json:"enqueued"`        // jobs sent (including jobs an exporter started although the send reported an error)
	Released       int `json:"released"`        // claims given back after a failed send
	Skipped        int `json:"skipped"`         // claims lost to a concurrent sweep or manual run
	Capped         int `json:"capped"`          // due rows left for a later sweep by the per-sweep cap
	CappedAccounts int `json:"capped_accounts"` // accounts that reached the per-account cap
	ItemsRead      int `json:"items_read"`      // items read from the table and index
	// Exhausted is the number of partitions of the enabled accounts that
	// currently stopped retrying and wait for a requeue (a level, not the
	// ones that stopped during this sweep); it feeds PartitionsExhausted.
	Exhausted int `json:"exhausted"`
	Retired   int `json:"retired"` // dead claims retired as exhausted by this sweep (included in Exhausted)
	// ExhaustedCounted is false when any account's count failed (or the
	// sweep stopped before counting): Exhausted is then a lower bound and is
	// not published, so the alarm keeps its state instead of clearing.
	ExhaustedCounted bool `json:"exhausted_counted"`
	Errors           int  `json:"errors"`
	// OldestDueAgeSeconds is how long the oldest due partition seen has been
	// closed (its day's end in the account's zone); 0 when nothing is due.
	// Due rows are read capped and queued-first, so it is a lower bound.
	OldestDueAgeSeconds int64 `json:"oldest_due_age_seconds"`
	DurationMS          int64 `json:"duration_ms"`
}

func (s *Sweeper) now() time.Time {
	if s.Config.Now != nil {
		return s.Config.Now()
	}
	return time.Now()
}

func (s *Sweeper) log() *slog.Logger {
	if s.Config.Log != nil {
		return s.Config.Log
	}
	return slog.Default()
}

// Run performs one sweep. Problems with one account or one row are logged,
// counted and joined into the error; they do not stop the sweep.
func (s *Sweeper) Run(ctx context.Context) (sum Summary, err error) {
	started := time.Now()
	defer func() { sum.DurationMS = time.Since(started).Milliseconds() }()
	if s.Config.PerAccountCap < 1 || s.Config.PerSweepCap < 1 {
		return sum, fmt.Errorf("sweeper: caps must be positive (per account %d, per sweep %d)", s.Config.PerAccountCap, s.Config.PerSweepCap)
	}
	if s.Config.QueueURL == "" {
		return sum, errors.New("sweeper: queue URL is empty")
	}
	now := s.now()
	var errs []error
	fail := func(err error) {
		sum.Errors++
		errs = append(errs, err)
		s.log().Error("sweep problem", "error", err.Error())
	}

	accounts, err := s.Ledger.ListAccounts(ctx)
	if err != nil {
		return sum, fmt.Errorf("sweeper: %w", err)
	}
	sum.ItemsRead += len(accounts)

	var queues [][]ledger.Row
	var enabled []account.Account
	for _, a := range accounts {
		if !a.Enabled {
			continue
		}
		enabled = append(enabled, a)
		sum.Accounts++
		a = a.WithDefaults(s.Config.DefaultSettleDelay)
		closed := a.ClosedThrough(now)
		for _, ds := range a.Datasets {
			n, reads, err := s.materialize(ctx, a, ds, closed)
			sum.Materialized += n
			sum.ItemsRead += reads
			if err != nil {
				fail(err)
			}
		}
		rows, stats, err := s.Ledger.Due(ctx, a.ID, s.Config.PerAccountCap)
		sum.ItemsRead += stats.Items
		if err != nil {
			fail(fmt.Errorf("account %s: due: %w", a.ID, err))
		}
		if len(rows) >= s.Config.PerAccountCap {
			sum.CappedAccounts++
		}
		sum.Due += len(rows)
		for _, r := range rows {
			if _, end := a.Window(r.Day); now.After(end) {
				sum.OldestDueAgeSeconds = max(sum.OldestDueAgeSeconds, int64(now.Sub(end).Seconds()))
			}
		}
		if len(rows) > 0 {
			queues = append(queues, rows)
		}
	}

	selected := roundRobin(queues, s.Config.PerSweepCap, rotation(now, len(queues)))
	sum.Capped = sum.Due - len(selected)

	claims, skipped, retired, claimErrs := s.claim(ctx, selected)
	sum.Claimed, sum.Skipped, sum.Retired = len(claims), skipped, retired
	for _, err := range claimErrs {
		fail(err)
	}

	sent, released, sendErrs := s.send(ctx, claims)
	sum.Enqueued, sum.Released = sent, released
	for _, err := range sendErrs {
		fail(err)
	}

	// Counted last, so the rows this sweep's claims retired are included.
	sum.ExhaustedCounted = true
	for _, a := range enabled {
		n, stats, err := s.Ledger.CountExhausted(ctx, a.ID)
		sum.ItemsRead += stats.Items
		if err != nil {
			fail(fmt.Errorf("account %s: count exhausted: %w", a.ID, err))
			sum.ExhaustedCounted = false
			continue
		}
		sum.Exhausted += n
		if n > 0 {
			s.log().Warn("partitions stopped retrying; fix the cause and requeue them", "account", a.ID, "exhausted", n)
		}
	}
	return sum, errors.Join(errs...)
}

// materialize creates the rows of one dataset up to the last closed day and
// advances the watermark; it returns rows created and items read.
func (s *Sweeper) materialize(ctx context.Context, a account.Account, ds string, closed civil.Date) (int, int, error) {
	wm, err := s.Ledger.Watermark(ctx, a.ID, ds)
	if err != nil {
		return 0, 1, fmt.Errorf("account %s dataset %s: watermark: %w", a.ID, ds, err)
	}
	from := a.StartDate
	if !wm.IsZero() && !wm.Before(from) {
		from = wm.AddDays(1)
	}
	if from.After(closed) {
		return 0, 1, nil
	}
	n, err := s.Ledger.Materialize(ctx, a.ID, ds, from, closed)
	if err != nil {
		return n, 1, fmt.Errorf("account %s dataset %s: materialize %s..%s: %w", a.ID, ds, from, closed, err)
	}
	if _, err := s.Ledger.AdvanceWatermark(ctx, a.ID, ds, closed); err != nil {
		return n, 1, fmt.Errorf("account %s dataset %s: watermark: %w", a.ID, ds, err)
	}
	return n, 1, nil
}

// rotation picks the account the round-robin starts from: it moves every
// minute, so an account late in the list is not always last when the
// per-sweep cap is smaller than the number of accounts with work.
func rotation(now time.Time, n int) int {
	if n == 0 {
		return 0
	}
	return int(now.Unix()/60) % n
}

// roundRobin takes one row from each account in turn, starting at start,
// until cap rows are taken or every queue is empty. Each queue keeps its S1
// order, so every account's oldest due work goes first.
func roundRobin(queues [][]ledger.Row, limit, start int) []ledger.Row {
	var out []ledger.Row
	for depth := 0; len(out) < limit; depth++ {
		took := false
		for i := range queues {
			q := queues[(start+i)%len(queues)]
			if depth < len(q) && len(out) < limit {
				out = append(out, q[depth])
				took = true
			}
		}
		if !took {
			break
		}
	}
	return out
}

// claimReason is the reason a due row is claimed with: failed rows and dead
// claims are retries; queued and pending rows keep their stored reason.
func claimReason(r ledger.Row) ledger.Reason {
	switch r.State {
	case ledger.StateFailed, ledger.StateRunning:
		return ledger.ReasonRetry
	}
	return ""
}

// claim claims rows concurrently and returns the claims in the rows' order.
func (s *Sweeper) claim(ctx context.Context, rows []ledger.Row) (claims []ledger.Claim, skipped, retired int, errs []error) {
	n := s.Config.ClaimConcurrency
	if n <= 0 {
		n = 8
	}
	results := make([]*ledger.Claim, len(rows))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, n)
	for i, r := range rows {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, err := s.Ledger.Claim(ctx, r.Key, claimReason(r))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				results[i] = &c
			case errors.Is(err, ledger.ErrExhausted):
				retired++
				s.log().Warn("partition exhausted its attempts", "account", r.AccountID, "dataset", r.Dataset, "day", r.Day.String(), "error", err.Error())
			case errors.Is(err, ledger.ErrConflict), errors.Is(err, ledger.ErrNotFound):
				skipped++ // another sweep or a manual run got there first
			default:
				errs = append(errs, fmt.Errorf("claim %s: %w", r.Key, err))
			}
		})
	}
	wg.Wait()
	for _, c := range results {
		if c != nil {
			claims = append(claims, *c)
		}
	}
	return claims, skipped, retired, errs
}

// JobFor returns the job message of a claim.
func JobFor(c ledger.Claim) Job {
	return Job{Kind: JobKind, AccountID: c.AccountID, Dataset: c.Dataset, Day: c.Day.String(),
		ClaimToken: c.Token, Attempt: c.Attempt, Generation: c.Generation, Reason: string(c.Reason)}
}

// send enqueues claims in batches of 10 and releases every claim whose
// message was not accepted. SQS may report an error for a message it did
// accept (a timeout, a lost response): if an exporter already started that
// job, the ledger refuses the release (ErrClaimLost) and the job counts as
// sent, not released.
func (s *Sweeper) send(ctx context.Context, claims []ledger.Claim) (sent, released int, errs []error) {
	for start := 0; start < len(claims); start += 10 {
		batch := claims[start:min(start+10, len(claims))]
		in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(s.Config.QueueURL)}
		for i, c := range batch {
			body, err := json.Marshal(JobFor(c))
			if err != nil {
				return sent, released, append(errs, err)
			}
			in.Entries = append(in.Entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(body))})
		}
		failed := map[int]string{}
		out, err := s.SQS.SendMessageBatch(ctx, in)
		if err != nil {
			for i := range batch {
				failed[i] = err.Error()
			}
		} else {
			for _, f := range out.Failed {
				i, convErr := strconv.Atoi(aws.ToString(f.Id))
				if convErr != nil || i < 0 || i >= len(batch) {
					continue
				}
				failed[i] = aws.ToString(f.Code) + ": " + aws.ToString(f.Message)
			}
			// An entry neither successful nor failed was not sent either.
			ok := map[string]bool{}
			for _, e := range out.Successful {
				ok[aws.ToString(e.Id)] = true
			}
			for i := range batch {
				if _, isFailed := failed[i]; !isFailed && !ok[strconv.Itoa(i)] {
					failed[i] = "no result for entry"
				}
			}
		}
		sent += len(batch) - len(failed)
		for i, why := range failed {
			c := batch[i]
			// A fresh context: the claim must go back even if ctx is ending.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			err := s.Ledger.Release(rctx, c)
			cancel()
			switch {
			case err == nil:
				released++
				errs = append(errs, fmt.Errorf("send job %s: %s", c.Key, why))
			case errors.Is(err, ledger.ErrClaimLost):
				// The job got through after all and an exporter started it (or the
				// claim moved on): the row is not ours to give back.
				sent++
				s.log().Warn("send reported an error but the job was delivered; counted as sent",
					"account", c.AccountID, "dataset", c.Dataset, "day", c.Day.String(), "send_error", why, "release", err.Error())
			default:
				errs = append(errs, fmt.Errorf("send job %s: %s", c.Key, why),
					fmt.Errorf("release %s (it will be reclaimed when its lease ends): %w", c.Key, err))
			}
		}
	}
	return sent, released, errs
}
