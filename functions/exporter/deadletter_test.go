package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Malformed and rejected messages go to the real DLQ of the deployed stack
// at once, with the reason, through the handler main builds (its DLQ
// client and JOBS_DLQ_URL); neighbours are unaffected.
func TestMalformedGoesStraightToTheDLQ(t *testing.T) {
	e := newEnv(t, envOpts{})
	cfg, out := deployed(t)
	q := sqs.NewFromConfig(cfg)
	dlq := out["JobsDLQUrl"]
	ev := loadEvent(t, filepath.Join("..", "..", "events", "exporter-malformed.json"))
	ok := &idRecorder{}
	ev.Records = append(ev.Records, events.SQSMessage{MessageId: "fine", Body: "ok"})
	h := e.handler
	if h.DLQURL != dlq {
		t.Fatalf("the handler's DLQ %q, the stack's %q", h.DLQURL, dlq)
	}
	h.Processor = splitProcessor{ok}
	resp, err := h.Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v: dead-lettered messages must not be redelivered", resp.BatchItemFailures)
	}
	got, err := q.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), MaxNumberOfMessages: 10,
		MessageAttributeNames: []string{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != 2 {
		t.Fatalf("DLQ holds %d messages, want the 2 malformed ones", len(got.Messages))
	}
	for _, m := range got.Messages {
		reason := aws.ToString(m.MessageAttributes["daybook_error"].StringValue)
		if !strings.Contains(reason, "malformed message") {
			t.Errorf("DLQ message %q has reason %q", aws.ToString(m.Body), reason)
		}
	}
	if strings.Join(ok.ids, ",") != "fine" {
		t.Errorf("neighbour processed: %v", ok.ids)
	}
}

// splitProcessor parses like Service and hands well-formed bodies to next.
type splitProcessor struct{ next *idRecorder }

func (p splitProcessor) Process(ctx context.Context, id, body string) error {
	if body == "ok" {
		return p.next.Process(ctx, id, body)
	}
	cat, err := dataset.Example()
	if err != nil {
		return err
	}
	svc := &Service{Catalog: cat, Log: slog.New(slog.DiscardHandler)}
	return svc.Process(ctx, id, body) // malformed bodies fail in parsing, before any dependency is used
}

type idRecorder struct{ ids []string }

func (r *idRecorder) Process(_ context.Context, id, _ string) error {
	r.ids = append(r.ids, id)
	return nil
}
