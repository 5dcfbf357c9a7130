package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SendAPI is the part of SQS a Queue sends with; *sqs.Client has it.
type SendAPI interface {
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

var _ SendAPI = (*sqs.Client)(nil)

// BatchSize is the most messages one SendMessageBatch request carries.
const BatchSize = 10

// Queue sends messages to one queue: the jobs queue, or the sweeper's
// queue of shard messages.
type Queue struct {
	API SendAPI
	URL string
}

// Outgoing is one message to send.
type Outgoing struct {
	Body string
	// Delay keeps it invisible for that long (whole seconds, SQS's
	// DelaySeconds); 0 is the queue's default.
	Delay time.Duration
}

// Sent is what became of one message.
type Sent struct {
	// MessageID is the queue's id of the message when it was accepted.
	MessageID string
	// Err is why it was not: the request's error (the same for every
	// message of the batch), an *EntryError the queue answered for the
	// message, or ErrNoResult.
	Err error
}

// EntryError is the queue's refusal of one message of a batch.
type EntryError struct{ Code, Message string }

func (e *EntryError) Error() string { return e.Code + ": " + e.Message }

// ErrNoResult is a message the queue's answer names neither accepted nor
// refused: it was not sent either.
var ErrNoResult = errors.New("no result for entry")

// SendBatch sends up to BatchSize messages in one request; sent[i] says
// what became of msgs[i]. err is the request's error: then no message was
// sent, and every sent[i].Err is err. A message reported not sent may be
// in the queue nonetheless (an answer lost to a timeout): the callers'
// ledger conditions make a message that arrives twice harmless.
func (q Queue) SendBatch(ctx context.Context, msgs []Outgoing) (sent []Sent, err error) {
	if len(msgs) > BatchSize {
		return nil, fmt.Errorf("a batch of %d messages: at most %d go in one request", len(msgs), BatchSize)
	}
	in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.URL)}
	for i, m := range msgs {
		in.Entries = append(in.Entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)),
			MessageBody: aws.String(m.Body), DelaySeconds: int32(m.Delay / time.Second)})
	}
	sent = make([]Sent, len(msgs))
	out, err := q.API.SendMessageBatch(ctx, in)
	if err != nil {
		for i := range sent {
			sent[i].Err = err
		}
		return sent, err
	}
	for i := range sent {
		sent[i].Err = ErrNoResult
	}
	for _, ok := range out.Successful {
		if i, convErr := strconv.Atoi(aws.ToString(ok.Id)); convErr == nil && i >= 0 && i < len(sent) {
			sent[i] = Sent{MessageID: aws.ToString(ok.MessageId)}
		}
	}
	for _, f := range out.Failed {
		if i, convErr := strconv.Atoi(aws.ToString(f.Id)); convErr == nil && i >= 0 && i < len(sent) {
			sent[i] = Sent{Err: &EntryError{Code: aws.ToString(f.Code), Message: aws.ToString(f.Message)}}
		}
	}
	return sent, nil
}

// Send sends msgs, in order, BatchSize to a request, and stops at the first
// request with a message not sent, with NotSent's error for it. Messages of
// the requests before stay sent: the callers' ledger conditions make a
// message sent again harmless.
func (q Queue) Send(ctx context.Context, msgs ...Outgoing) error {
	for batch := range slices.Chunk(msgs, BatchSize) {
		sent, err := q.SendBatch(ctx, batch)
		if err == nil {
			err = NotSent(sent)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// SendAll sends msgs, in order, BatchSize to a request, and goes on past
// a request that failed: sent[i] says what became of msgs[i], so the
// caller can put back what each unsent message stood for (a claim, a
// check). As with SendBatch, a message reported not sent may be in the
// queue nonetheless.
func (q Queue) SendAll(ctx context.Context, msgs ...Outgoing) (sent []Sent) {
	sent = make([]Sent, 0, len(msgs))
	for batch := range slices.Chunk(msgs, BatchSize) {
		s, _ := q.SendBatch(ctx, batch) // its error is in every s[i].Err
		sent = append(sent, s...)
	}
	return sent
}

// Encoded is one Outgoing message per value, each encoded with Encode.
func Encoded[T any](vs ...T) ([]Outgoing, error) {
	msgs := make([]Outgoing, 0, len(vs))
	for _, v := range vs {
		body, err := Encode(v)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, Outgoing{Body: body})
	}
	return msgs, nil
}

// NotSent is nil when every message was accepted; otherwise the request's
// error, or how many of the messages were not accepted and why the first
// was not.
func NotSent(sent []Sent) error {
	failed := 0
	var first error
	for _, s := range sent {
		if s.Err != nil {
			failed++
			first = cmp.Or(first, s.Err)
		}
	}
	switch {
	case failed == 0:
		return nil
	case !isEntryErr(first):
		return first
	}
	return fmt.Errorf("%d of %d messages not sent: %w", failed, len(sent), first)
}

func isEntryErr(err error) bool {
	var e *EntryError
	return errors.As(err, &e) || errors.Is(err, ErrNoResult)
}
