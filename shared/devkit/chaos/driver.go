package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/eventsource"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// maxBatches bounds one round's drain: every batch is at least one
// invocation, so a queue that never empties ends the run with an error.
const maxBatches = 5000

// drive runs rounds until the pipeline has drained with the kills done: a
// round sweeps (two sweepers at once, or one), asks for re-exports while
// kills are missing, delivers the queue to the exporters until it is empty,
// then makes the time pass that the run does not wait for.
func (p *pipeline) drive(ctx context.Context) error {
	for round := 1; round <= p.o.MaxRounds; round++ {
		p.rep.Rounds = round
		claimed, err := p.sweep(ctx)
		if err != nil {
			return err
		}
		if err := p.checkReclaimed(ctx); err != nil {
			return err
		}
		asked, err := p.reexport(ctx)
		if err != nil {
			return err
		}
		if err := p.raceAccounts(ctx, round); err != nil {
			return err
		}
		plants, err := p.plantCommits(ctx, round) // plant_manifest.go
		if err != nil {
			return err
		}
		delivered, err := p.drain(ctx)
		if err != nil {
			return err
		}
		if err := p.checkPlants(ctx, round, plants); err != nil {
			return err
		}
		if err := p.checkAtRestDeliveries(ctx, round); err != nil {
			return err
		}
		if err := p.checkTables(ctx, fmt.Sprintf("after round %d: ", round), false); err != nil {
			return err
		}
		if round <= forgedRounds {
			if err := p.forge(ctx, round); err != nil {
				return err
			}
		}
		if err := p.plantIceberg(ctx, round); err != nil { // plant_iceberg.go
			return err
		}
		moved, open, err := p.passTime(ctx)
		if err != nil {
			return err
		}
		kills := p.faults.Kills()
		p.logf("round %d: claimed %d, re-exports %d, delivered %d, leases ended/requeued %d, partitions not completed %d, kills %d/%d",
			round, claimed, asked, delivered, moved, open, kills, p.o.Kills)
		if kills >= p.o.Kills && claimed == 0 && asked == 0 && delivered == 0 && moved == 0 && open == 0 {
			return nil
		}
	}
	return fmt.Errorf("chaos: not drained after %d rounds (kills %d of %d)", p.o.MaxRounds, p.faults.Kills(), p.o.Kills)
}

// sweep invokes one sweeper, or both at once.
func (p *pipeline) sweep(ctx context.Context) (int, error) {
	n := 1 + p.rng.IntN(len(p.sweepers))
	sums := make([]eventsource.SweepSummary, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			d := eventsource.Driver{Catalog: p.catalog, Sweeper: p.sweepers[i]}
			// Every sweep is as of the run's start, the instant expected() closes
			// the days by, as a schedule tick names one: a day that closes
			// during the run is not one of its partitions.
			sums[i], errs[i] = d.Sweep(ctx, p.started, p.rep.Sweeps+i)
		})
	}
	wg.Wait()
	p.rep.Sweeps += n
	if n > 1 {
		p.rep.ConcurrentSweeps++
	}
	claimed := 0
	for i := range n {
		if errs[i] != nil {
			return 0, errs[i]
		}
		claimed += sums[i].Claimed
	}
	return claimed, nil
}

// reexport asks for manual re-exports of random partitions while kills are
// missing: each is another run through the commit protocol to fault.
func (p *pipeline) reexport(ctx context.Context) (int, error) {
	if p.faults.Kills() >= p.o.Kills {
		return 0, nil
	}
	parts := p.expected()
	for i := range p.o.Reexports {
		k := parts[p.rng.IntN(len(parts))]
		if i == 0 && p.big != nil {
			k = *p.big
		}
		body, err := jobs.Encode(jobs.Manual{Kind: jobs.KindManual, AccountID: k.AccountID, Dataset: k.Dataset, Day: k.Day.String(), RequestedBy: "chaos"})
		if err != nil {
			return 0, err
		}
		if err := p.send(ctx, body); err != nil {
			return 0, err
		}
	}
	p.rep.Reexports += p.o.Reexports
	return p.o.Reexports, nil
}

func (p *pipeline) send(ctx context.Context, body string) error {
	return p.sendTo(ctx, p.queueURL, body)
}

func (p *pipeline) sendTo(ctx context.Context, url, body string) error {
	_, err := p.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: &body})
	return err
}

// drain delivers the queue to the exporters, one message each at a time,
// until a receive comes back empty. A message the exporter reported failed,
// or whose exporter was killed, is made visible again at once (its
// visibility timeout passing); some messages are sent a second time.
func (p *pipeline) drain(ctx context.Context) (int, error) {
	return p.drainQueue(ctx, p.queueURL, p.o.Duplicate)
}

// drainQueue is drain of the queue at url, sending a message again with
// probability dup.
func (p *pipeline) drainQueue(ctx context.Context, url string, dup float64) (int, error) {
	delivered := 0
	for range maxBatches {
		out, err := p.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url,
			MaxNumberOfMessages:         int32(len(p.exporters)),
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil {
			return delivered, fmt.Errorf("receive: %w", err)
		}
		if len(out.Messages) == 0 {
			return delivered, nil
		}
		for _, m := range out.Messages {
			if p.rng.Float64() < dup {
				if err := p.sendTo(ctx, url, aws.ToString(m.Body)); err != nil {
					return delivered, err
				}
				p.rep.Duplicates++
			}
		}
		errs := make([]error, len(out.Messages))
		var wg sync.WaitGroup
		for i, m := range out.Messages {
			wg.Go(func() { errs[i] = p.invoke(ctx, p.exporters[i], url, m) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return delivered, err
		}
		delivered += len(out.Messages)
	}
	return delivered, fmt.Errorf("chaos: the queue did not drain in %d batches", maxBatches)
}

// invoke runs one message through one exporter as the SQS event source
// mapping would (batch size 1), then deletes it or makes it visible again.
func (p *pipeline) invoke(ctx context.Context, x *exporter, url string, m sqstypes.Message) error {
	ev := events.SQSEvent{Records: []events.SQSMessage{{
		MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
		Attributes: m.Attributes, EventSource: "aws:sqs", EventSourceARN: p.queueARN, AWSRegion: "us-east-1",
	}}}
	payload, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	out, err := x.fn.Invoke(ctx, payload)
	p.mu.Lock()
	p.rep.Invocations++
	p.mu.Unlock()
	again := err != nil // killed (the emulator answers 502), or a function error
	if err == nil {
		var resp events.SQSEventResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			return fmt.Errorf("exporter response %q: %w", out, err)
		}
		again = len(resp.BatchItemFailures) > 0
	} else {
		p.mu.Lock()
		p.rep.Crashed++
		p.mu.Unlock()
	}
	if again {
		_, err := p.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
		return err
	}
	_, err = p.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle})
	return err
}

// passTime does, once no exporter runs and the queue is empty, what waiting
// would: every running row's exporter is dead (it was killed), so its lease
// ends now (ledger.ExpireClaim) instead of in three minutes; every failed
// row, waiting out its backoff or stopped retrying, is requeued (an
// operator's `daybook requeue`). It returns how many rows it moved and how
// many partitions are not completed.
func (p *pipeline) passTime(ctx context.Context) (moved, open int, err error) {
	rows, err := p.rows(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, r := range rows {
		if r.State != ledger.StateCompleted {
			open++
		}
		switch r.State {
		case ledger.StateRunning:
			if err := p.led.Partitions().ExpireClaim(ctx, r.Key, r.ClaimToken); err != nil {
				return moved, open, err
			}
			p.rep.LeasesEnded++
			p.noteExpired(r)
			moved++
		case ledger.StateFailed:
			if _, err := p.led.Partitions().Requeue(ctx, ledger.RequeueRange{AccountID: r.AccountID, Dataset: r.Dataset, From: r.Day, To: r.Day, Reason: partition.ReasonRetry}); err != nil {
				return moved, open, err
			}
			p.rep.Requeued++
			moved++
		}
	}
	if n := len(p.expected()); len(rows) < n {
		open += n - len(rows) // not materialized yet
	}
	return moved, open, nil
}

// rows reads every partition row of every account's enabled datasets.
func (p *pipeline) rows(ctx context.Context) ([]ledger.Row, error) {
	var out []ledger.Row
	for _, a := range p.accounts {
		for _, ds := range a.Datasets {
			rs, err := p.led.Partitions().List(ctx, a.ID, ds, a.StartDate, civil.Of(time.Now().UTC()).AddDays(1))
			if err != nil {
				return nil, err
			}
			out = append(out, rs...)
		}
	}
	return out, nil
}

// expected is every partition that must be committed: each enabled
// dataset's days from the account's start through its last closed day when
// the run began.
func (p *pipeline) expected() []partition.Key {
	var out []partition.Key
	for _, a := range p.accounts {
		closed := a.WithDefaults(0).ClosedThrough(p.started)
		for _, ds := range a.Datasets {
			for _, d := range civil.Range(a.StartDate, closed) {
				out = append(out, partition.Key{AccountID: a.ID, Dataset: ds, Day: d})
			}
		}
	}
	slices.SortFunc(out, func(a, b partition.Key) int { return strings.Compare(a.String(), b.String()) })
	return out
}
