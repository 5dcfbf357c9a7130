package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
)

// Processor handles one message body; a nil error means the message is done.
type Processor interface {
	Process(ctx context.Context, messageID, body string) error
}

var _ Processor = (*Service)(nil)

// Handler translates an SQS batch into Process calls and reports the
// messages to redeliver (ReportBatchItemFailures, SPEC E5): one bad message
// never fails or repeats its neighbours.
type Handler struct {
	Processor Processor
	Log       *slog.Logger
}

// Handle is the Lambda entry point.
func (h Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for _, rec := range ev.Records {
		if ctx.Err() != nil {
			// Out of time: leave the rest for redelivery rather than half-run them.
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
			continue
		}
		if err := h.process(ctx, rec); err != nil {
			h.Log.ErrorContext(ctx, "message not done; SQS will deliver it again", "message_id", rec.MessageId,
				"receive_count", rec.Attributes["ApproximateReceiveCount"], "error", err.Error())
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
		}
	}
	return resp, nil
}

// process runs one record; a panic fails that record only, never its
// neighbours (SPEC E5), and is logged with the message id.
func (h Handler) process(ctx context.Context, rec events.SQSMessage) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic processing message %s: %v", rec.MessageId, p)
		}
	}()
	return h.Processor.Process(ctx, rec.MessageId, rec.Body)
}
