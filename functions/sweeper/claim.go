package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// rotation picks the account the round-robin starts from: it moves every
// minute, so an account late in the list is not always last when the
// budget is smaller than the work.
func rotation(now time.Time, n int) int {
	if n == 0 {
		return 0
	}
	return int(now.Unix()/60) % n
}

// selectRows picks up to limit rows across accounts: every account's
// scheduled rows (its newest closed day) first, round-robin, then the rest
// round-robin (L6). Each account's queue keeps its order (S1), so its oldest
// due work goes first among the rest.
func selectRows(queues [][]ledger.Row, limit, start int) []ledger.Row {
	sched := make([][]ledger.Row, len(queues))
	rest := make([][]ledger.Row, len(queues))
	for i, q := range queues {
		n := 0
		for n < len(q) && q[n].Scheduled() {
			n++
		}
		sched[i], rest[i] = q[:n], q[n:]
	}
	out := roundRobin(sched, limit, start)
	return append(out, roundRobin(rest, limit-len(out), start)...)
}

// roundRobin takes one row from each account in turn, starting at start,
// until limit rows are taken or every queue is empty.
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
func claimReason(r ledger.Row) partition.Reason {
	switch r.State {
	case ledger.StateFailed, ledger.StateRunning:
		return partition.ReasonRetry
	}
	return ""
}

// claimError is a claim that failed for a reason other than a lost race.
type claimError struct {
	key partition.Key
	err error
}

// claim claims rows concurrently and returns the claims in the rows' order.
// liveEnds holds, per account, the earliest end of the live claims that
// refused a row (another sweep or a manual run took it since it was read):
// if that claim dies, its row is due again then, so the account's wake may
// not pass it (L3).
func (s *Sweeper) claim(ctx context.Context, rows []ledger.Row) (claims []ledger.Claim, skipped, retired int, liveEnds map[string]time.Time, errs []claimError) {
	liveEnds = map[string]time.Time{}
	results := make([]*ledger.Claim, len(rows))
	var stops []partition.Stop // of the dead claims retired on their last attempt
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, orDefault(s.Config.ClaimConcurrency, 32))
	for i, r := range rows {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, err := s.Ledger.Claim(ctx, r.Key, claimReason(r))
			mu.Lock()
			defer mu.Unlock()
			var live *ledger.LiveClaimError
			switch {
			case err == nil:
				results[i] = &c
			case errors.As(err, &live):
				skipped++ // another sweep or a manual run got there first
				if t, ok := liveEnds[r.AccountID]; !ok || live.Ends().Before(t) {
					liveEnds[r.AccountID] = live.Ends()
				}
			case errors.Is(err, ledger.ErrStopped):
				retired++
				s.log().Warn("partition stopped retrying", "account", r.AccountID, "dataset", r.Dataset, "day", r.Day.String(), "error", err.Error())
				var se *ledger.StoppedError
				if errors.As(err, &se) {
					stops = append(stops, se.Stop)
				}
			case errors.Is(err, ledger.ErrConflict), errors.Is(err, ledger.ErrNotFound):
				skipped++ // another sweep or a manual run got there first
			default:
				errs = append(errs, claimError{r.Key, fmt.Errorf("claim %s: %w", r.Key, err)})
			}
		})
	}
	wg.Wait()
	s.publishStopped(ctx, stops)
	for _, c := range results {
		if c != nil {
			claims = append(claims, *c)
		}
	}
	return claims, skipped, retired, liveEnds, errs
}

// JobFor returns the job message of a claim.
func JobFor(c ledger.Claim) Job {
	return Job{Kind: JobKind, AccountID: c.AccountID, Dataset: c.Dataset, Day: c.Day.String(),
		ClaimToken: c.Token, Attempt: c.Attempt, Generation: c.Generation, Reason: string(c.Reason)}
}

// send enqueues claims, in order (jobs.Queue.SendAll: ten to a request),
// and releases every claim whose message was not accepted. SQS may report
// an error for a message it did accept (a timeout, a lost response): if an
// exporter already started that job, the ledger refuses the release
// (ErrClaimLost) and the job counts as sent, not released. unsent holds the
// claims whose job is not in the queue.
func (s *Sweeper) send(ctx context.Context, claims []ledger.Claim) (sent, released int, unsent map[partition.Key]bool, errs []error) {
	unsent = map[partition.Key]bool{}
	msgs := make([]jobs.Outgoing, len(claims))
	for i, c := range claims {
		body, err := json.Marshal(JobFor(c))
		if err != nil {
			return 0, 0, unsent, []error{err}
		}
		msgs[i] = jobs.Outgoing{Body: string(body)}
	}
	for i, r := range (jobs.Queue{API: s.SQS, URL: s.Config.QueueURL}).SendAll(ctx, msgs...) {
		if r.Err == nil {
			sent++
			continue
		}
		c, why := claims[i], r.Err.Error()
		// A fresh context: the claim must go back even if ctx is ending.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err := s.Ledger.Release(rctx, c)
		cancel()
		switch {
		case err == nil:
			released++
			unsent[c.Key] = true
			errs = append(errs, fmt.Errorf("send job %s: %s", c.Key, why))
		case errors.Is(err, ledger.ErrClaimLost):
			// The job got through after all and an exporter started it (or the
			// claim moved on): the row is not ours to give back.
			sent++
			s.log().Warn("send reported an error but the job got through; counted as sent",
				"account", c.AccountID, "dataset", c.Dataset, "day", c.Day.String(), "send_error", why, "release", err.Error())
		default:
			unsent[c.Key] = true
			errs = append(errs, fmt.Errorf("send job %s: %s", c.Key, why),
				fmt.Errorf("release %s (it will be reclaimed when its lease ends): %w", c.Key, err))
		}
	}
	return sent, released, unsent, errs
}
