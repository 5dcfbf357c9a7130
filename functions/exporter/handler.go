package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/daybook-dev/daybook/shared/jobs"
)

// Processor handles one message body; a nil error means the message is done.
type Processor interface {
	Process(ctx context.Context, messageID, body string) error
}

var _ Processor = (*Service)(nil)

// Handler translates an SQS batch into Process calls and reports the
// messages to redeliver (ReportBatchItemFailures, E5): one bad message
// never fails or repeats its neighbours.
type Handler struct {
	Processor Processor
	Log       *slog.Logger
	// DeadLetters receives messages that can never succeed (malformed or
	// rejected) at once, with the reason, instead of after maxReceiveCount
	// visibility timeouts. Nil leaves them to the queue's redrive policy.
	DeadLetters DeadLetterAPI
	DLQURL      string
	// MinRemaining is the least invocation time a record needs to be
	// started at all; a record seen later is handed back untouched, so it
	// uses no attempt (default 2 x DefaultReserve).
	MinRemaining time.Duration
}

// DeadLetterAPI sends one message to the dead-letter queue.
type DeadLetterAPI interface {
	SendMessage(ctx context.Context, params *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

var _ DeadLetterAPI = (*sqs.Client)(nil)

// Handle is the Lambda entry point.
func (h Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for _, rec := range ev.Records {
		if ctx.Err() != nil || h.tooLate(ctx) {
			// Out of time: leave the rest for redelivery rather than half-run them.
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
			continue
		}
		err := h.process(ctx, rec)
		if err != nil && permanent(err) && h.DeadLetters != nil {
			if derr := h.deadLetter(ctx, rec, err); derr == nil {
				continue
			} else {
				err = fmt.Errorf("%w (and sending it to the dead-letter queue failed: %v)", err, derr)
			}
		}
		if err != nil {
			h.Log.ErrorContext(ctx, "message not done; SQS will send it again", "message_id", rec.MessageId,
				"receive_count", rec.Attributes["ApproximateReceiveCount"], "error", err.Error())
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
		}
	}
	return resp, nil
}

// process runs one record; a panic fails that record only, never its
// neighbours (E5), and is logged with the message id.
func (h Handler) process(ctx context.Context, rec events.SQSMessage) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic processing message %s: %v", rec.MessageId, p)
		}
	}()
	return h.Processor.Process(ctx, rec.MessageId, rec.Body)
}

// permanent reports whether redelivering the message can never help.
func permanent(err error) bool {
	return errors.Is(err, jobs.ErrMalformed) || errors.Is(err, ErrRejected)
}

// deadLetter moves a message that can never succeed to the DLQ, keeping its
// body and saying why in message attributes.
func (h Handler) deadLetter(ctx context.Context, rec events.SQSMessage, cause error) error {
	reason := cause.Error()
	if len(reason) > 1024 {
		reason = reason[:1024]
	}
	_, err := h.DeadLetters.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:    aws.String(h.DLQURL),
		MessageBody: aws.String(rec.Body),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			"daybook_error":      {DataType: aws.String("String"), StringValue: aws.String(reason)},
			"daybook_message_id": {DataType: aws.String("String"), StringValue: aws.String(rec.MessageId)},
		},
	})
	if err != nil {
		return err
	}
	h.Log.ErrorContext(ctx, "message can never succeed; moved to the dead-letter queue", "message_id", rec.MessageId, "error", reason)
	return nil
}

func (h Handler) tooLate(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	if !ok {
		return false
	}
	need := h.MinRemaining
	if need == 0 {
		need = 2 * DefaultReserve
	}
	return time.Until(dl) < need
}
