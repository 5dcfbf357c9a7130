package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/ops"
)

// dlqAPI is the part of SQS the dlq commands call.
type dlqAPI interface {
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessage(ctx context.Context, params *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(ctx context.Context, params *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, params *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

var _ dlqAPI = (*sqs.Client)(nil)

// dlqMessage is one dead letter, for output.
type dlqMessage struct {
	MessageID string `json:"message_id"`
	SentAt    string `json:"sent_at,omitempty"`
	AgeSecs   int64  `json:"age_seconds"`
	Receives  int    `json:"receive_count,omitempty"`
	Reason    string `json:"reason"`
	Body      string `json:"body"`
}

func (a *app) dlqCommand() *cobra.Command {
	return cli.Group("dlq", "List, redrive and delete dead letters", a.dlqListCommand(), a.dlqRedriveCommand(), a.dlqDeleteCommand(), a.dlqPurgeCommand())
}

// dlqURL picks the queue --queue names.
func dlqURL(c *cobra.Command, e *opsEnv, which string) (string, error) {
	switch which {
	case "jobs":
		if e.dlqURL == "" {
			return "", fmt.Errorf("%s names no jobs dead-letter queue (JOBS_DLQ_URL, or the stack output JobsDLQUrl)", e.dep.desc)
		}
		return e.dlqURL, nil
	case "sweeper":
		if e.sweeperDLQURL == "" {
			return "", fmt.Errorf("%s names no sweeper dead-letter queue (SWEEPER_DLQ_URL, or the stack output SweeperDLQUrl)", e.dep.desc)
		}
		return e.sweeperDLQURL, nil
	}
	return "", cli.Usagef(c, "--queue %q: want jobs or sweeper", which)
}

func (a *app) dlqListCommand() *cobra.Command {
	var which string
	var most int
	c := &cobra.Command{
		Use:   "list [--queue jobs|sweeper]",
		Short: "List dead letters: age, reason and message",
		Long: `List the messages in a dead-letter queue without removing them: each is received with a short
visibility timeout and made visible again at once. The jobs queue's dead letters carry the
exporter's reason (the daybook_error attribute); the sweeper's are failed scheduled sweeps.`,
	}
	a.deploymentFlags(c)
	c.Flags().StringVar(&which, "queue", "jobs", "jobs (export jobs and re-export requests) or sweeper (failed sweeps)")
	c.Flags().IntVar(&most, "max", 100, "list at most this many")
	_ = c.RegisterFlagCompletionFunc("queue", cobra.FixedCompletions([]string{"jobs", "sweeper"}, cobra.ShellCompDirectiveNoFileComp))
	out := outputFlag(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		if most < 1 {
			return cli.Usagef(c, "--max %d: want 1 or more", most)
		}
		ctx := c.Context()
		e, err := a.open(ctx)
		if err != nil {
			return err
		}
		url, err := dlqURL(c, e, which)
		if err != nil {
			return err
		}
		msgs, err := a.peek(ctx, e.sqs, url, most)
		if err != nil {
			return err
		}
		if *out == outputJSON {
			return printJSON(a.stdout, nonNil(msgs))
		}
		if len(msgs) == 0 {
			_, err := fmt.Fprintf(a.stdout, "%s is empty\n", lastSegment(url))
			return err
		}
		tw := newTable(a.stdout)
		tw.header("AGE\tSENT\tRECEIVES\tREASON\tMESSAGE")
		for _, m := range msgs {
			tw.row((time.Duration(m.AgeSecs) * time.Second).String(), m.SentAt, m.Receives, clip(m.Reason, 100), clip(m.Body, 160))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		_, err = fmt.Fprintf(a.stdout, "%d messages in %s\n", len(msgs), lastSegment(url))
		return err
	}
	return c
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// receiveWait is how long a receive waits for a message (long polling).
// A short poll asks only a sample of SQS's servers and may answer empty
// while a small queue holds messages (SQS developer guide, "Amazon SQS
// short and long polling"), which would make list say a dead-letter queue
// is empty and redrive stop early; an empty queue costs this once.
const receiveWait = time.Second

// receiveBatch receives up to 10 messages with their attributes, hidden for
// hide.
func receiveBatch(ctx context.Context, api dlqAPI, url string, n int, hide time.Duration) ([]sqstypes.Message, error) {
	out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: int32(min(n, 10)), VisibilityTimeout: int32(hide.Seconds()),
		WaitTimeSeconds:             int32(receiveWait.Seconds()),
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	if err != nil {
		return nil, fmt.Errorf("receive from %s: %w", lastSegment(url), err)
	}
	return out.Messages, nil
}

// release makes received messages visible again at once.
func release(ctx context.Context, api dlqAPI, url string, msgs []sqstypes.Message) error {
	for chunk := range slices.Chunk(msgs, 10) {
		in := &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url)}
		for i, m := range chunk {
			in.Entries = append(in.Entries, sqstypes.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
		}
		if _, err := api.ChangeMessageVisibilityBatch(context.WithoutCancel(ctx), in); err != nil {
			return fmt.Errorf("make the listed messages visible again in %s (they reappear within 30 s anyway): %w", lastSegment(url), err)
		}
	}
	return nil
}

// peek lists up to most messages and leaves them in the queue.
func (a *app) peek(ctx context.Context, api dlqAPI, url string, most int) ([]dlqMessage, error) {
	var held []sqstypes.Message
	seen := map[string]bool{}
	var out []dlqMessage
	for len(out) < most {
		batch, err := receiveBatch(ctx, api, url, most-len(out), 30*time.Second)
		if err != nil {
			return out, err
		}
		if len(batch) == 0 {
			break
		}
		held = append(held, batch...)
		for _, m := range batch {
			if id := aws.ToString(m.MessageId); !seen[id] {
				seen[id] = true
				out = append(out, a.dlqMessage(m))
			}
		}
	}
	if err := release(ctx, api, url, held); err != nil {
		return out, err
	}
	slices.SortStableFunc(out, func(x, y dlqMessage) int { return strings.Compare(x.SentAt, y.SentAt) })
	return out, nil
}

func (a *app) dlqMessage(m sqstypes.Message) dlqMessage {
	d := dlqMessage{MessageID: aws.ToString(m.MessageId), Body: aws.ToString(m.Body), Reason: deadLetterReason(m)}
	if ms, err := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
		sent := time.UnixMilli(ms).UTC()
		d.SentAt = ops.FormatTime(sent)
		d.AgeSecs = int64(a.now().Sub(sent).Truncate(time.Second).Seconds())
	}
	d.Receives, _ = strconv.Atoi(m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
	return d
}

// deadLetterReason says why a message is dead: the exporter's
// daybook_error attribute, EventBridge Scheduler's ERROR_MESSAGE, a Lambda
// on-failure record's error, or that it came through the queue's redrive
// policy (the exporter crashed on it maxReceiveCount times).
func deadLetterReason(m sqstypes.Message) string {
	for _, k := range []string{"daybook_error", "ERROR_MESSAGE", "ERROR_CODE"} {
		if v, ok := m.MessageAttributes[k]; ok && aws.ToString(v.StringValue) != "" {
			return aws.ToString(v.StringValue)
		}
	}
	var rec struct {
		RequestContext struct {
			Condition string `json:"condition"`
		} `json:"requestContext"`
		ResponsePayload struct {
			ErrorMessage string `json:"errorMessage"`
		} `json:"responsePayload"`
	}
	if json.Unmarshal([]byte(aws.ToString(m.Body)), &rec) == nil && (rec.ResponsePayload.ErrorMessage != "" || rec.RequestContext.Condition != "") {
		return strings.TrimSpace(rec.RequestContext.Condition + ": " + rec.ResponsePayload.ErrorMessage)
	}
	return "received too many times without success (the exporter crashed or timed out on it)"
}

func (a *app) dlqRedriveCommand() *cobra.Command {
	var most int
	c := &cobra.Command{
		Use:   "redrive [--max N]",
		Short: "Move the jobs dead letters back to the jobs queue",
		Long: `Move the jobs queue's dead letters back to the jobs queue, oldest first: each message is
received from the dead-letter queue, sent to the jobs queue with its body and attributes (the
old reason dropped), and only then deleted from the dead-letter queue. A message whose send
fails stays where it was. If the command dies between a send and its delete, the message is in
both queues; running it twice is harmless (a duplicated job is dropped by its claim token, a
duplicated re-export request exports the day once more). This uses receive, send and delete,
not SQS StartMessageMoveTask, so it works on every SQS-compatible endpoint. A message that
would fail the same way stays in the dead-letter queue, and the command says why: a body the
exporter cannot read, or a re-export request its check refuses now (no such account, disabled,
a dataset it does not export, a day before the start date). Fix the cause (then redrive again)
or delete it: daybook dlq delete.`,
	}
	a.deploymentFlags(c)
	c.Flags().IntVar(&most, "max", 1000, "move at most this many")
	c.RunE = func(c *cobra.Command, _ []string) error {
		if most < 1 {
			return cli.Usagef(c, "--max %d: want 1 or more", most)
		}
		ctx := c.Context()
		e, err := a.open(ctx)
		if err != nil {
			return err
		}
		from, err := dlqURL(c, e, "jobs")
		if err != nil {
			return err
		}
		if e.queueURL == "" {
			return fmt.Errorf("%s names no jobs queue (JOBS_QUEUE_URL, or the stack output JobsQueueUrl)", e.dep.desc)
		}
		total := most
		if attrs, err := e.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(from),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}}); err == nil {
			if n, err := strconv.Atoi(attrs.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)]); err == nil {
				total = min(n, most)
			}
		}
		bar := a.progress(total, "redrive")
		moved, left, err := redrive(ctx, e.sqs, from, e.queueURL, most, a.redriveCheck(ctx, e), bar.Add)
		bar.Finish()
		fmt.Fprintf(a.stdout, "moved %d messages from %s to %s\n", moved, lastSegment(from), lastSegment(e.queueURL))
		for _, l := range left {
			fmt.Fprintf(a.stdout, "left %s in %s: it would fail the same way (%s)\n", l[0], lastSegment(from), printable(l[1]))
		}
		if len(left) > 0 {
			fmt.Fprintf(a.stdout, "%d messages left: fix their cause and redrive again, or delete them (daybook dlq delete MESSAGE_ID --yes)\n", len(left))
		}
		return err
	}
	return c
}

// redrive moves up to most messages from one queue to another: receive,
// send, then delete; a failed send releases the message where it was. A
// message check names a reason for stays (made visible again at the end)
// and is returned as [id, reason].
func redrive(ctx context.Context, api dlqAPI, from, to string, most int, check func(sqstypes.Message) string, step func(int)) (moved int, left [][2]string, err error) {
	var kept []sqstypes.Message
	defer func() {
		if rerr := release(ctx, api, from, kept); rerr != nil && err == nil {
			err = rerr
		}
	}()
	for moved < most {
		batch, err := receiveBatch(ctx, api, from, most-moved, 2*time.Minute)
		if err != nil {
			return moved, left, err
		}
		if len(batch) == 0 {
			return moved, left, nil
		}
		for i, m := range batch {
			if why := check(m); why != "" {
				kept = append(kept, m)
				left = append(left, [2]string{aws.ToString(m.MessageId), why})
				continue
			}
			attrs := map[string]sqstypes.MessageAttributeValue{}
			for k, v := range m.MessageAttributes {
				if !strings.HasPrefix(k, "daybook_") {
					attrs[k] = v
				}
			}
			attrs["daybook_redriven_from"] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: m.MessageId}
			if _, err := api.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(to), MessageBody: m.Body, MessageAttributes: attrs}); err != nil {
				rerr := release(ctx, api, from, batch[i:])
				return moved, left, fmt.Errorf("send message %s to %s (it stays in %s): %w%s", aws.ToString(m.MessageId), lastSegment(to), lastSegment(from), err, errSuffix(rerr))
			}
			if _, err := api.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(from), ReceiptHandle: m.ReceiptHandle}); err != nil {
				rerr := release(ctx, api, from, batch[i+1:])
				return moved, left, fmt.Errorf("message %s was sent to %s but not deleted from %s, so it is in both (harmless; delete it by hand or let it be redriven again): %w%s",
					aws.ToString(m.MessageId), lastSegment(to), lastSegment(from), err, errSuffix(rerr))
			}
			moved++
			step(1)
		}
	}
	return moved, left, nil
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return "; also: " + err.Error()
}
