// Package eventsource does locally what EventBridge Scheduler and the SQS
// event source mappings do in AWS: it invokes the sweeper on a schedule,
// runs the sweeper on the shard messages a large sweep fans out to the sweep
// queue, and receives batches from the jobs queue, invokes the exporter with
// an SQSEvent, deletes the messages it reports done and leaves the reported
// failures for redelivery. The functions are the real bootstrap binaries
// under the Lambda Runtime Interface Emulator.
package eventsource

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/partition"
)

// Invoker runs one function invocation and returns its response.
type Invoker interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

// QueueAPI is the part of SQS the driver uses.
type QueueAPI interface {
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, params *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

var _ QueueAPI = (*sqs.Client)(nil)

// SweepSummary is the part of the sweeper's response the driver reads.
type SweepSummary struct {
	Claimed  int `json:"claimed"`
	Enqueued int `json:"enqueued"`
	Errors   int `json:"errors"`
}

// Driver runs the pipeline.
type Driver struct {
	// Catalog is the deployment's dataset catalog, which the messages'
	// datasets are read against (Progress.Partitions).
	Catalog  *dataset.Set
	Sweeper  Invoker
	Exporter Invoker
	Queue    QueueAPI
	QueueURL string
	QueueARN string
	Region   string
	// SweepQueueURL and SweepQueueARN, if set, are the sweeper's fan-out
	// queue: after each sweep the driver runs the sweeper on its messages,
	// one per invocation, as the sweeper's event source does.
	SweepQueueURL string
	SweepQueueARN string
	// BatchSize is the event source mapping's batch size (template: 1).
	BatchSize int
	// RedeliverFailures makes reported failures visible again at once, as
	// if their visibility timeout had passed; off, they stay hidden for the
	// queue's timeout like in AWS.
	RedeliverFailures bool
	// Progress is called after every exporter batch.
	Progress func(Progress)
}

// Progress counts what the driver did so far.
type Progress struct {
	Sweeps   int
	Claimed  int
	Batches  int
	Messages int
	// Done and Failed count messages: handled (deleted), or reported
	// failed (left for redelivery). A message whose export failed is
	// handled: the failure is recorded in the ledger, with its retry.
	Done, Failed int
	// Partitions are the partitions the exporter's messages named (a
	// claimed job, a slice of one, a manual request of one day and
	// dataset), each once, in the order first seen: their ledger rows say
	// how each export went, which the queue cannot.
	Partitions []partition.Key
	seen       map[partition.Key]bool
	LastSweep  SweepSummary
}

// note adds the partition body names, if any, to p.Partitions.
func (p *Progress) note(catalog *dataset.Set, body string) {
	m, err := jobs.Parse(catalog, body)
	if err != nil {
		return
	}
	var acct, ds, day string
	switch {
	case m.Job != nil:
		acct, ds, day = m.Job.AccountID, m.Job.Dataset, m.Job.Day
	case m.Slice != nil:
		acct, ds, day = m.Slice.AccountID, m.Slice.Dataset, m.Slice.Day
	case m.Manual != nil && m.Manual.Dataset != "":
		acct, ds, day = m.Manual.AccountID, m.Manual.Dataset, m.Manual.Day
	}
	d, err := civil.Parse(day)
	if acct == "" || ds == "" || err != nil {
		return // not one partition's message (a range, a lifecycle message)
	}
	k := partition.Key{AccountID: acct, Dataset: ds, Day: d}
	if p.seen == nil {
		p.seen = map[partition.Key]bool{}
	}
	if !p.seen[k] {
		p.seen[k] = true
		p.Partitions = append(p.Partitions, k)
	}
}

// Sweep invokes the sweeper once with a scheduler-shaped event whose tick
// (scheduled_time) is now, to the nanosecond: the sweeper closes the days
// closed at it, so a driver with a fixed clock exports the same days
// whatever the hour it runs at.
func (d *Driver) Sweep(ctx context.Context, now time.Time, n int) (SweepSummary, error) {
	ev, _ := json.Marshal(map[string]string{
		"source": "daybook.local-driver", "scheduled_time": now.UTC().Format(time.RFC3339Nano),
		"execution_id": fmt.Sprintf("local-%d", n), "attempt": "1",
	})
	out, err := d.Sweeper.Invoke(ctx, ev)
	if err != nil {
		return SweepSummary{}, fmt.Errorf("sweeper: %w", err)
	}
	var s SweepSummary
	if err := json.Unmarshal(out, &s); err != nil {
		return SweepSummary{}, fmt.Errorf("sweeper response %q: %w", out, err)
	}
	return s, nil
}

// Drain delivers the queue to the exporter until a receive comes back empty.
func (d *Driver) Drain(ctx context.Context, p *Progress) error {
	size := d.BatchSize
	if size <= 0 || size > 10 {
		size = 1
	}
	for {
		out, err := d.Queue.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(d.QueueURL), MaxNumberOfMessages: int32(size),
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return fmt.Errorf("receive: %w", err)
		}
		if len(out.Messages) == 0 {
			return nil
		}
		if err := d.deliver(ctx, out.Messages, p); err != nil {
			return err
		}
	}
}

func (d *Driver) deliver(ctx context.Context, msgs []sqstypes.Message, p *Progress) error {
	ev := events.SQSEvent{}
	for _, m := range msgs {
		attrs := map[string]string{}
		for k, v := range m.Attributes {
			attrs[k] = v
		}
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
			Md5OfBody: aws.ToString(m.MD5OfBody), Attributes: attrs, EventSource: "aws:sqs", EventSourceARN: d.QueueARN, AWSRegion: d.Region,
		})
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	out, err := d.Exporter.Invoke(ctx, payload)
	failed := map[string]bool{}
	if err != nil {
		// A function error fails the whole batch, as the event source mapping treats it.
		for _, m := range msgs {
			failed[aws.ToString(m.MessageId)] = true
		}
	} else {
		var resp events.SQSEventResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			return fmt.Errorf("exporter response %q: %w", out, err)
		}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
	}
	var del []sqstypes.DeleteMessageBatchRequestEntry
	var again []sqstypes.ChangeMessageVisibilityBatchRequestEntry
	for i, m := range msgs {
		p.note(d.Catalog, aws.ToString(m.Body))
		id := strconv.Itoa(i)
		if failed[aws.ToString(m.MessageId)] {
			again = append(again, sqstypes.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(id), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
			continue
		}
		del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(id), ReceiptHandle: m.ReceiptHandle})
	}
	if len(del) > 0 {
		if _, err := d.Queue.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(d.QueueURL), Entries: del}); err != nil {
			return fmt.Errorf("delete done messages: %w", err)
		}
	}
	if len(again) > 0 && d.RedeliverFailures {
		if _, err := d.Queue.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(d.QueueURL), Entries: again}); err != nil {
			return fmt.Errorf("release failed messages: %w", err)
		}
	}
	p.Batches++
	p.Messages += len(msgs)
	p.Done += len(del)
	p.Failed += len(again)
	if d.Progress != nil {
		d.Progress(*p)
	}
	return nil
}

// Run sweeps and drains until a sweep claims nothing and the queue is
// empty: the ledger has no work due now. Each sweep's tick is now().
// maxSweeps bounds the loop.
func (d *Driver) Run(ctx context.Context, now func() time.Time, maxSweeps int) (Progress, error) {
	var p Progress
	for p.Sweeps < maxSweeps {
		s, err := d.Sweep(ctx, now(), p.Sweeps)
		if err != nil {
			return p, err
		}
		p.Sweeps++
		p.Claimed += s.Claimed
		p.LastSweep = s
		if err := d.RunShards(ctx); err != nil {
			return p, err
		}
		before := p.Messages
		if err := d.Drain(ctx, &p); err != nil {
			return p, err
		}
		if s.Claimed == 0 && p.Messages == before {
			return p, nil
		}
	}
	return p, fmt.Errorf("still due work after %d sweeps", maxSweeps)
}

// RunShards runs the sweeper on every message of the sweep queue, one per
// invocation, and deletes the messages it does not report failed (a failed
// one goes to the dead-letter queue in AWS; here it stays hidden for the
// queue's visibility timeout). Without SweepQueueURL it does nothing.
func (d *Driver) RunShards(ctx context.Context) error {
	if d.SweepQueueURL == "" {
		return nil
	}
	for {
		out, err := d.Queue.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(d.SweepQueueURL), MaxNumberOfMessages: 1})
		if err != nil {
			return fmt.Errorf("receive shard message: %w", err)
		}
		if len(out.Messages) == 0 {
			return nil
		}
		m := out.Messages[0]
		payload, err := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{{
			MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
			EventSource: "aws:sqs", EventSourceARN: d.SweepQueueARN, AWSRegion: d.Region,
		}}})
		if err != nil {
			return err
		}
		resp, err := d.Sweeper.Invoke(ctx, payload)
		if err != nil {
			return fmt.Errorf("sweeper on a shard message: %w", err)
		}
		var r events.SQSEventResponse
		if err := json.Unmarshal(resp, &r); err != nil {
			return fmt.Errorf("sweeper response %q: %w", resp, err)
		}
		if len(r.BatchItemFailures) > 0 {
			continue
		}
		if _, err := d.Queue.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(d.SweepQueueURL),
			Entries: []sqstypes.DeleteMessageBatchRequestEntry{{Id: aws.String("0"), ReceiptHandle: m.ReceiptHandle}}}); err != nil {
			return fmt.Errorf("delete shard message: %w", err)
		}
	}
}
