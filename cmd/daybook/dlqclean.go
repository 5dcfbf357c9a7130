package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ops"
)

// messageIDRE is an SQS message id.
var messageIDRE = regexp.MustCompile(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`)

// dlqFilter picks dead letters to delete: by message id, by a substring of
// the reason or the body, or every malformed message.
type dlqFilter struct {
	ids       []string
	reason    string
	body      string
	malformed bool
	all       bool
}

func (f dlqFilter) empty() bool {
	return len(f.ids) == 0 && f.reason == "" && f.body == "" && !f.malformed && !f.all
}

func (f dlqFilter) match(catalog *dataset.Set, m dlqMessage) bool {
	switch {
	case f.all:
		return true
	case len(f.ids) > 0:
		for _, id := range f.ids {
			if id == m.MessageID {
				return true
			}
		}
		return false
	}
	if f.reason != "" && !strings.Contains(strings.ToLower(m.Reason), strings.ToLower(f.reason)) {
		return false
	}
	if f.body != "" && !strings.Contains(m.Body, f.body) {
		return false
	}
	if f.malformed {
		_, err := jobs.Parse(catalog, m.Body)
		return errors.Is(err, jobs.ErrMalformed)
	}
	return true
}

func (a *app) dlqDeleteCommand() *cobra.Command {
	var which string
	var f dlqFilter
	var yes bool
	c := &cobra.Command{
		Use:   "delete [MESSAGE_ID...] [--reason TEXT] [--body TEXT] [--malformed] [--queue jobs|sweeper] --yes",
		Short: "Delete dead letters by message id or by filter",
		Long: `Delete dead letters for good: the messages named by id (daybook dlq list shows them), or every
message whose reason contains --reason, whose body contains --body, or that is malformed
(--malformed: a body the exporter cannot read). Filters combine. Without --yes nothing is
deleted: the command lists what it would delete and says to run it again with --yes.`,
		Example: "  daybook dlq delete 7b0c9f3e-2d5a-4e1b-8c6f-1a2b3c4d5e6f --yes\n  daybook dlq delete --malformed --yes\n  daybook dlq delete --reason \"before start date\"",
		Args:    cobra.ArbitraryArgs,
	}
	a.deploymentFlags(c)
	c.Flags().StringVar(&which, "queue", "jobs", "jobs or sweeper")
	c.Flags().StringVar(&f.reason, "reason", "", "delete the messages whose reason contains this text (case-insensitive)")
	c.Flags().StringVar(&f.body, "body", "", "delete the messages whose body contains this text")
	c.Flags().BoolVar(&f.malformed, "malformed", false, "delete the messages the exporter cannot read")
	c.Flags().BoolVar(&yes, "yes", false, "delete; without it the command only lists what it would delete")
	c.RunE = func(c *cobra.Command, args []string) error {
		for _, id := range args {
			if !messageIDRE.MatchString(id) {
				return cli.Usagef(c, "%q: not a message id (want the MESSAGE_ID daybook dlq list -o json shows, e.g. 7b0c9f3e-2d5a-4e1b-8c6f-1a2b3c4d5e6f)", id)
			}
		}
		f.ids = args
		if f.empty() {
			return cli.Usagef(c, "name the messages: message ids, or --reason, --body or --malformed (daybook dlq purge empties the queue)")
		}
		if len(args) > 0 && (f.reason != "" || f.body != "" || f.malformed) {
			return cli.Usagef(c, "give message ids or filters, not both")
		}
		return a.dlqDelete(c, which, f, yes, "delete")
	}
	return c
}

func (a *app) dlqPurgeCommand() *cobra.Command {
	var which string
	var yes bool
	c := &cobra.Command{
		Use:   "purge [--queue jobs|sweeper] --yes",
		Short: "Delete every message in a dead-letter queue",
		Long: `Delete every message in a dead-letter queue for good. Without --yes nothing is deleted: the
command says how many messages it would delete.`,
		Example: "  daybook dlq purge --yes\n  daybook dlq purge --queue sweeper --yes",
	}
	a.deploymentFlags(c)
	c.Flags().StringVar(&which, "queue", "jobs", "jobs or sweeper")
	c.Flags().BoolVar(&yes, "yes", false, "delete; without it the command only counts what it would delete")
	c.RunE = func(c *cobra.Command, _ []string) error {
		return a.dlqDelete(c, which, dlqFilter{all: true}, yes, "purge")
	}
	return c
}

// dlqDelete deletes the dead letters f matches (with yes; otherwise it
// lists them), leaving every other message as it was.
func (a *app) dlqDelete(c *cobra.Command, which string, f dlqFilter, yes bool, verb string) error {
	ctx := c.Context()
	e, err := a.open(ctx)
	if err != nil {
		return err
	}
	url, err := dlqURL(c, e, which)
	if err != nil {
		return err
	}
	var held, kept []sqstypes.Message
	deleted, matched := 0, 0
	var listed []dlqMessage
	defer func() { _ = release(ctx, e.sqs, url, kept) }()
	for {
		batch, err := receiveBatch(ctx, e.sqs, url, 10, 2*time.Minute)
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			break
		}
		held = append(held, batch...)
		for _, m := range batch {
			d := a.dlqMessage(m)
			if !f.match(a.catalog, d) {
				kept = append(kept, m)
				continue
			}
			matched++
			if !yes {
				kept = append(kept, m)
				listed = append(listed, d)
				continue
			}
			if _, err := e.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				return fmt.Errorf("delete message %s from %s (deleted %d before it): %w", d.MessageID, lastSegment(url), deleted, err)
			}
			deleted++
		}
	}
	if !yes {
		for _, d := range listed {
			fmt.Fprintf(a.stdout, "%s\t%s\t%s\n", d.MessageID, clip(d.Reason, 80), clip(d.Body, 120))
		}
		_, err := fmt.Fprintf(a.stdout, "%d of %d messages in %s would be deleted; nothing was deleted: run the command again with --yes\n", matched, len(held), lastSegment(url))
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "%s: deleted %d of %d messages from %s\n", verb, deleted, len(held), lastSegment(url))
	return err
}

// redriveCheck says why a jobs dead letter would fail the same way if it
// were sent back: a body the exporter cannot read, or a manual request the
// exporter's own check refuses now (no such account, disabled, a dataset it
// does not export, a day before its start date). "" when it may succeed.
func (a *app) redriveCheck(ctx context.Context, e *opsEnv) func(sqstypes.Message) string {
	return func(m sqstypes.Message) string {
		msg, err := jobs.Parse(a.catalog, aws.ToString(m.Body))
		if err != nil {
			return "malformed: " + err.Error()
		}
		if msg.Manual == nil {
			return ""
		}
		if _, _, _, err := ops.CheckRequest(ctx, a.catalog, ops.LedgerOf(e.ledger), *msg.Manual, jobs.Limits{Now: a.now(), SettleDelay: e.settle}); errors.Is(err, jobs.ErrRefused) || errors.Is(err, jobs.ErrMalformed) {
			return "refused: " + err.Error()
		}
		return ""
	}
}
