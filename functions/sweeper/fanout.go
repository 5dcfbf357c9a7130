package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// ShardJobKind is ShardJob.Kind.
const ShardJobKind = "sweep_shards"

// ShardJob is a fan-out message on the sweep queue: sweep these shards of
// the fleet index under this budget. The sweep queue's event source runs the
// sweeper on it (Handler.Invoke).
type ShardJob struct {
	Kind   string `json:"kind"`
	Shards []int  `json:"shards"`
	Budget int    `json:"budget"`
	// Sweep is the instant the scheduled sweep that sent it closes days as
	// of (RFC 3339): the worker closes days as of it too, and the logs name
	// the sweep by it.
	Sweep string `json:"sweep,omitempty"`
}

// tick is Sweep as a time; zero when it is empty or not a time (the worker
// then closes days as of its clock).
func (j ShardJob) tick() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, j.Sweep)
	return t
}

func (j ShardJob) validate() error {
	if j.Kind != ShardJobKind || len(j.Shards) == 0 || j.Budget < 0 {
		return fmt.Errorf("shard job %+v: want kind %q, shards and a budget >= 0", j, ShardJobKind)
	}
	for _, s := range j.Shards {
		if s < 0 || s >= ledger.FleetShards {
			return fmt.Errorf("shard job: shard %d out of 0..%d", s, ledger.FleetShards-1)
		}
	}
	return nil
}

// fanOut sends the woken shards to the sweep queue in groups of about
// FanOutAccounts accounts, each with its share of the budget in proportion
// to its accounts, and at.asOf, the instant the sweep closes days as of. Shards
// whose read stopped at the limit (full) are counted first. It returns the
// messages sent.
func (s *Sweeper) fanOut(ctx context.Context, woken [][]ledger.Woken, full []int, at sweepInstants, budget int, sum *Summary) (int, error) {
	now, asOf := at.now, at.asOf
	counts := make([]int, ledger.FleetShards)
	for i, ws := range woken {
		counts[i] = len(ws)
	}
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, shard := range full {
		wg.Go(func() {
			n, st, err := s.Ledger.CountWoken(ctx, shard, now)
			mu.Lock()
			defer mu.Unlock()
			sum.ItemsRead += st.Items
			if err != nil {
				errs = append(errs, err)
				return
			}
			sum.Woken += n - counts[shard]
			counts[shard] = n
		})
	}
	wg.Wait()
	// The workers draw from one budget window with every concurrent sweep's
	// workers: open it with this sweep's budget before they start.
	if _, err := s.reserve(ctx, budget, 0); err != nil {
		errs = append(errs, err)
	}
	groups := planFanOut(counts, orDefault(s.Config.FanOutAccounts, defaultFanOutAccounts), budget)
	sweep := asOf.UTC().Format(time.RFC3339Nano)
	sent := 0
	msgs := make([]jobs.Outgoing, len(groups))
	for i, j := range groups {
		j.Sweep = sweep
		body, _ := json.Marshal(j)
		msgs[i] = jobs.Outgoing{Body: string(body)}
	}
	for i, r := range (jobs.Queue{API: s.SQS, URL: s.Config.SweepQueueURL}).SendAll(ctx, msgs...) {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("fan out message %d: %w", i, r.Err))
		} else {
			sent++
		}
	}
	// An unsent group's accounts stay woken: the next sweep takes them.
	s.log().Info("sweep fanned out", "woken", sum.Woken, "messages", sent, "of", len(groups), "budget", budget)
	return sent, errors.Join(errs...)
}

// planFanOut groups consecutive shards with woken accounts so that each
// group holds at most per accounts (a shard with more stands alone) and
// splits budget among the groups in proportion to their accounts.
func planFanOut(counts []int, per, budget int) []ShardJob {
	var jobs []ShardJob
	var sizes []int
	cur, size := []int(nil), 0
	for shard, n := range counts {
		if n == 0 {
			continue
		}
		if len(cur) > 0 && size+n > per {
			jobs, sizes = append(jobs, ShardJob{Kind: ShardJobKind, Shards: cur}), append(sizes, size)
			cur, size = nil, 0
		}
		cur, size = append(cur, shard), size+n
	}
	if len(cur) > 0 {
		jobs, sizes = append(jobs, ShardJob{Kind: ShardJobKind, Shards: cur}), append(sizes, size)
	}
	total := 0
	for _, n := range sizes {
		total += n
	}
	// Largest remainders: each group gets its proportional share rounded
	// down, and the rest go one each to the groups that lost the most.
	rems := make([]int, len(jobs))
	given := 0
	for i := range jobs {
		jobs[i].Budget = budget * sizes[i] / max(total, 1)
		rems[i] = budget * sizes[i] % max(total, 1)
		given += jobs[i].Budget
	}
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return rems[order[a]] > rems[order[b]] })
	for k := 0; given < budget && len(jobs) > 0; k++ {
		jobs[order[k%len(jobs)]].Budget++
		given++
	}
	return jobs
}
