package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/dataset/example"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// receiveAll takes every visible message off a queue.
func (s stack) receiveAll(t *testing.T, url string) []sqstypes.Message {
	t.Helper()
	q := sqs.NewFromConfig(s.cfg)
	var out []sqstypes.Message
	for {
		r, err := q.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			VisibilityTimeout: 60, MessageAttributeNames: []string{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) == 0 {
			return out
		}
		out = append(out, r.Messages...)
	}
}

func TestRetry(t *testing.T) {
	s := deployed(t)
	ctx := context.Background()
	acct := s.newAccount(t, nil)
	l := s.ledgerAt(t, testNow, 6)
	rows := func() int {
		n, err := l.Partitions().Count(ctx, acct.ID, "events", firstDay, lastDay)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// jobs.CheckRequest's refusals, worded with the flags typed.
	refusals := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"today with --day", []string{"--day", "2026-11-30"}, cli.ExitError, `--day "2026-11-30" is not closed yet for account ` + acct.ID + " (time zone UTC, settle delay 2h0m0s): the last closed day is 2026-11-29"},
		{"a range ending today", []string{"--from", "2026-11-28", "--to", "2026-11-30"}, cli.ExitError, `--to "2026-11-30" is not closed yet`},
		{"a dataset the account does not export", []string{"--dataset", "profiles", "--day", "2026-11-20"}, cli.ExitError, `--dataset "profiles" is not enabled for account ` + acct.ID + " (enabled: events)"},
		{"a day before the start date", []string{"--from", "2026-10-30", "--to", "2026-11-02"}, cli.ExitError, `--from "2026-10-30" is before account ` + acct.ID + "'s start date 2026-11-01"},
		{"a missing account", []string{"--account", "acct_nosuchaccount234", "--day", "2026-11-20"}, cli.ExitError, `--account "acct_nosuchaccount234" is not an account (no such account); daybook account list shows them`},
		{"a malformed account id", []string{"--account", "acct_a", "--day", "2026-11-20"}, cli.ExitUsage, `--account "acct_a" is not an account id`},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			a, _, _ := testApp(t)
			args := append([]string{"retry", "--account", acct.ID, "--dataset", "events"}, tt.args...)
			r := s.run(t, a, args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("exit %d, want %d; stderr lacks %q:\n%s", r.code, tt.code, tt.stderr, r.stderr)
			}
			if n := rows(); n != 0 {
				t.Errorf("a refused retry wrote %d rows", n)
			}
		})
	}

	a, _, stderr := testApp(t)
	a.terminal = func(io.Writer) bool { return true } // a progress bar for the 29 days
	r := s.run(t, a, "retry", "--account", acct.ID, "--dataset", "events", "--from", "2026-11-01", "--to", "2026-11-29", "-o", "json")
	var res ledger.RequeueResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 || res.Queued != 29 || res.Created != 29 {
		t.Fatalf("retry: exit %d %+v %v\n%s", r.code, res, err, r.stderr)
	}
	if !strings.Contains(stderr.String(), "retry") || !strings.Contains(stderr.String(), "(7/29)") {
		t.Errorf("no progress bar on a terminal:\n%q", stderr.String())
	}
	if n := rows(); n != 29 {
		t.Errorf("%d rows, want 29", n)
	}
	r = s.run(t, a, "retry", "--account", acct.ID, "--dataset", "events", "--day", "2026-11-29", "--requested-by", "ops-alice")
	if r.code != 0 || !strings.Contains(r.stdout, "made 1 partition due (1 day 2026-11-29..2026-11-29, events)") {
		t.Errorf("retry table output:\n%s%s", r.stdout, r.stderr)
	}
	// Who asked is in the ledger: history says it, table and JSON.
	if r := s.run(t, a, "history", "--account", acct.ID, "--dataset", "events", "--day", "2026-11-29"); !strings.Contains(r.stdout, "requested by ops-alice") {
		t.Errorf("history does not say who retried:\n%s%s", r.stdout, r.stderr)
	}
	var h historyOut
	if r := s.run(t, a, "history", "--account", acct.ID, "--dataset", "events", "--day", "2026-11-29", "-o", "json"); json.Unmarshal([]byte(r.stdout), &h) != nil || h.Current == nil || h.Current.RequestedBy != "ops-alice" {
		t.Errorf("history -o json: %+v\n%s", h.Current, r.stdout)
	}

	// daybook requeue, the earlier name, is the same command: an operator's
	// scripts that run it make days due as ever.
	r = s.run(t, a, "requeue", "--account", acct.ID, "--dataset", "events", "--day", "2026-11-28", "--requested-by", "ops-bob", "-o", "json")
	res = ledger.RequeueResult{}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 || res.Queued != 1 {
		t.Errorf("daybook requeue (the earlier name of retry): exit %d %+v %v\n%s", r.code, res, err, r.stderr)
	}
	if r := s.run(t, a, "history", "--account", acct.ID, "--dataset", "events", "--day", "2026-11-28"); !strings.Contains(r.stdout, "requested by ops-bob") {
		t.Errorf("history does not say who retried through daybook requeue:\n%s%s", r.stdout, r.stderr)
	}

	// A disabled account is refused.
	s.run(t, a, "account", "disable", acct.ID)
	if r := s.run(t, a, "retry", "--account", acct.ID, "--dataset", "events", "--day", "2026-11-20"); r.code != cli.ExitError ||
		!strings.Contains(r.stderr, `--account "`+acct.ID+`" is disabled; enable it first: daybook account enable `+acct.ID) {
		t.Errorf("disabled: exit %d\n%s", r.code, r.stderr)
	}
}

func TestReexport(t *testing.T) {
	s := deployed(t)
	queue := s.outputs["JobsQueueUrl"]
	s.purge(t, queue)
	acct := s.newAccount(t, nil)
	a, _, stderr := testApp(t)

	for _, args := range [][]string{
		{"--day", "2026-11-30"},
		{"--from", "2026-11-29", "--to", "2026-11-30"},
	} {
		r := s.run(t, a, append([]string{"reexport", "--account", acct.ID, "--dataset", "events"}, args...)...)
		if r.code != cli.ExitError || !strings.Contains(r.stderr, args[len(args)-2]+` "2026-11-30" is not closed yet`) {
			t.Errorf("%v: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	// Refused before anything is sent: a missing account, a malformed one, a
	// dataset the account does not export, a disabled account.
	other := s.newAccount(t, nil)
	s.run(t, a, "account", "disable", other.ID)
	for _, tt := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"--account", "acct_nosuchaccount234", "--dataset", "events"}, cli.ExitError, `--account "acct_nosuchaccount234" is not an account`},
		{[]string{"--account", "acct_a", "--dataset", "events"}, cli.ExitUsage, `--account "acct_a" is not an account id`},
		{[]string{"--account", acct.ID, "--dataset", "daily_stats"}, cli.ExitError, `--dataset "daily_stats" is not enabled for account ` + acct.ID},
		{[]string{"--account", other.ID, "--dataset", "events"}, cli.ExitError, `--account "` + other.ID + `" is disabled`},
	} {
		r := s.run(t, a, append(append([]string{"reexport"}, tt.args...), "--day", "2026-11-20")...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) {
			t.Errorf("%v: exit %d, want %d; stderr lacks %q:\n%s", tt.args, r.code, tt.code, tt.stderr, r.stderr)
		}
	}
	if msgs := s.receiveAll(t, queue); len(msgs) != 0 {
		t.Fatalf("refused re-exports sent %d messages", len(msgs))
	}

	a.terminal = func(io.Writer) bool { return true }
	r := s.run(t, a, "reexport", "--account", acct.ID, "--dataset", "events", "--from", "2026-11-01", "--to", "2026-11-25", "-o", "json")
	var sent []sentRequest
	if err := json.Unmarshal([]byte(r.stdout), &sent); err != nil || r.code != 0 || len(sent) != 25 {
		t.Fatalf("reexport: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if !strings.Contains(stderr.String(), "reexport") || !strings.Contains(stderr.String(), "(10/25)") {
		t.Errorf("no progress bar on a terminal: %q", stderr.String())
	}
	msgs := s.receiveAll(t, queue)
	var days []string
	ids := map[string]int{}
	for _, m := range msgs {
		msg, err := jobs.Parse(datasettest.Example(t), aws.ToString(m.Body))
		if err != nil || msg.Manual == nil {
			t.Fatalf("message %q: %v", aws.ToString(m.Body), err)
		}
		days = append(days, msg.Manual.Day)
		ids[msg.Manual.RequestID]++
		// moto's caller identity.
		if !strings.HasPrefix(msg.Manual.RequestedBy, "arn:aws:") {
			t.Errorf("requested_by %q, want the caller's ARN", msg.Manual.RequestedBy)
		}
	}
	// One request, one id: the exporter serves each of its days once
	// however often SQS sends a message.
	if len(ids) != 1 || ids[""] != 0 {
		t.Errorf("request ids of one re-export: %v, want one id on every message", ids)
	}
	var want []string
	for _, d := range civil.Range(civil.MustParse("2026-11-01"), civil.MustParse("2026-11-25")) {
		want = append(want, d.String())
	}
	if strings.Join(sorted(days), " ") != strings.Join(want, " ") {
		t.Errorf("one message per day: %v", days)
	}

	r = s.run(t, a, "reexport", "--account", acct.ID, "--dataset", "events", "--day", "2026-11-20", "--requested-by", "ticket OPS-12")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "sent {") {
		t.Errorf("single day: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if msgs := s.receiveAll(t, queue); len(msgs) != 1 || !strings.Contains(aws.ToString(msgs[0].Body), `"requested_by":"ticket OPS-12"`) {
		t.Errorf("--requested-by: %v", msgs)
	}

	// Without --dataset: every dataset of the account, one message per day
	// and dataset.
	two := s.newAccount(t, map[string]any{"datasets": []string{"events", "daily_stats"}})
	r = s.run(t, a, "reexport", "--account", two.ID, "--from", "2026-11-19", "--to", "2026-11-20")
	if r.code != 0 || !strings.Contains(r.stdout, "sent 4 re-export requests for "+two.ID+" (events, daily_stats) 2026-11-19..2026-11-20") {
		t.Errorf("every dataset: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var got []string
	for _, m := range s.receiveAll(t, queue) {
		if msg, err := jobs.Parse(datasettest.Example(t), aws.ToString(m.Body)); err == nil && msg.Manual != nil {
			got = append(got, msg.Manual.Dataset+" "+msg.Manual.Day)
		}
	}
	if strings.Join(sorted(got), ",") != "daily_stats 2026-11-19,daily_stats 2026-11-20,events 2026-11-19,events 2026-11-20" {
		t.Errorf("messages without --dataset: %v", got)
	}
}

// TestRetryEveryDataset: retry without --dataset queues the days of
// every dataset of the account.
func TestRetryEveryDataset(t *testing.T) {
	s := deployed(t)
	acct := s.newAccount(t, map[string]any{"datasets": []string{"events", "daily_stats"}})
	a, _, _ := testApp(t)
	r := s.run(t, a, "retry", "--account", acct.ID, "--from", "2026-11-20", "--to", "2026-11-22", "-o", "json")
	var res retried
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 || res.Queued != 6 || strings.Join(res.Datasets, ",") != "events,daily_stats" {
		t.Fatalf("retry every dataset: exit %d %+v %v\n%s", r.code, res, err, r.stderr)
	}
	l := s.ledgerAt(t, testNow, 6)
	for _, ds := range res.Datasets {
		if n, err := l.Partitions().Count(context.Background(), acct.ID, ds, civil.MustParse("2026-11-20"), civil.MustParse("2026-11-22")); err != nil || n != 3 {
			t.Errorf("%s: %d rows, %v", ds, n, err)
		}
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestDLQListAndRedrive(t *testing.T) {
	s := deployed(t)
	ctx := context.Background()
	dlq, queue := s.outputs["JobsDLQUrl"], s.outputs["JobsQueueUrl"]
	s.purge(t, dlq)
	s.purge(t, queue)
	q := sqs.NewFromConfig(s.cfg)
	bodies := []string{`{"kind":"job","day":"2026-13-45"}`, `export yesterday please`}
	for i, b := range bodies {
		attrs := map[string]sqstypes.MessageAttributeValue{
			"daybook_error":      {DataType: aws.String("String"), StringValue: aws.String([]string{"malformed message: day \"2026-13-45\" is not a date", "malformed message: body is not a JSON object"}[i])},
			"daybook_message_id": {DataType: aws.String("String"), StringValue: aws.String("m" + string(rune('0'+i)))},
		}
		if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlq), MessageBody: aws.String(b), MessageAttributes: attrs}); err != nil {
			t.Fatal(err)
		}
	}
	a, _, _ := testApp(t)
	sentAt := time.Now()
	a.now = func() time.Time { return sentAt.Add(90 * time.Minute) }

	for range 2 { // listing leaves the messages where they are
		r := s.run(t, a, "dlq", "list", "-o", "json")
		var msgs []dlqMessage
		if err := json.Unmarshal([]byte(r.stdout), &msgs); err != nil || r.code != 0 || len(msgs) != 2 {
			t.Fatalf("dlq list: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
		}
		for _, m := range msgs {
			if !strings.HasPrefix(m.Reason, "malformed message") || m.AgeSecs < 89*60 || m.AgeSecs > 91*60 || m.SentAt == "" {
				t.Errorf("message %+v", m)
			}
		}
	}
	r := s.run(t, a, "dlq", "list")
	if !strings.Contains(r.stdout, "1h30m0s") || !strings.Contains(r.stdout, "malformed message: body is not a JSON object") || !strings.Contains(r.stdout, "2 messages in daybook-clitest-jobs-dlq") {
		t.Errorf("dlq list table:\n%s", r.stdout)
	}
	if r := s.run(t, a, "dlq", "list", "--queue", "sweeper"); r.code != 0 || !strings.Contains(r.stdout, "daybook-clitest-sweeper-dlq is empty") {
		t.Errorf("sweeper dlq: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := s.run(t, a, "dlq", "list", "--queue", "exporter"); r.code != cli.ExitUsage || !strings.Contains(r.stderr, `--queue "exporter": want jobs or sweeper`) {
		t.Errorf("bad --queue: exit %d\n%s", r.code, r.stderr)
	}

	// A valid job goes back; the two malformed messages would fail the same
	// way, so they stay, and the command says why.
	job := `{"kind":"job","account_id":"acct_localdemoaccount","dataset":"events","day":"2026-11-27","claim_token":"9d6f0c2b7e4a1358c0ffee42deadbeef","attempt":1,"generation":1,"reason":"scheduled"}`
	if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlq), MessageBody: aws.String(job)}); err != nil {
		t.Fatal(err)
	}
	r = s.run(t, a, "dlq", "redrive")
	if r.code != 0 || !strings.Contains(r.stdout, "moved 1 messages from daybook-clitest-jobs-dlq to daybook-clitest-jobs") ||
		strings.Count(r.stdout, "it would fail the same way (malformed: ") != 2 || !strings.Contains(r.stdout, "2 messages left") {
		t.Fatalf("redrive: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	moved := s.receiveAll(t, queue)
	if len(moved) != 1 || aws.ToString(moved[0].Body) != job {
		t.Errorf("moved %d messages, want the job", len(moved))
	}
	for _, m := range moved {
		if _, ok := m.MessageAttributes["daybook_redriven_from"]; !ok {
			t.Errorf("no daybook_redriven_from: %v", m.MessageAttributes)
		}
	}

	// dlq delete: nothing without --yes, then the malformed ones.
	r = s.run(t, a, "dlq", "delete", "--malformed")
	if r.code != 0 || !strings.Contains(r.stdout, "2 of 2 messages in daybook-clitest-jobs-dlq would be deleted; nothing was deleted") {
		t.Errorf("delete without --yes: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = s.run(t, a, "dlq", "list", "-o", "json")
	var msgs []dlqMessage
	if err := json.Unmarshal([]byte(r.stdout), &msgs); err != nil || len(msgs) != 2 {
		t.Fatalf("after a delete without --yes, dlq list: %v\n%s", err, r.stdout)
	}
	r = s.run(t, a, "dlq", "delete", msgs[0].MessageID, "--yes")
	if r.code != 0 || !strings.Contains(r.stdout, "delete: deleted 1 of 2 messages") {
		t.Errorf("delete by id: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := s.run(t, a, "dlq", "delete", "not-an-id", "--yes"); r.code != cli.ExitUsage || !strings.Contains(r.stderr, `"not-an-id": not a message id`) {
		t.Errorf("delete a malformed id: exit %d\n%s", r.code, r.stderr)
	}
	if r := s.run(t, a, "dlq", "delete", "--yes"); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "name the messages") {
		t.Errorf("delete without a filter: exit %d\n%s", r.code, r.stderr)
	}
	// dlq purge: every message, only with --yes.
	if r := s.run(t, a, "dlq", "purge"); r.code != 0 || !strings.Contains(r.stdout, "1 of 1 messages in daybook-clitest-jobs-dlq would be deleted") {
		t.Errorf("purge without --yes: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := s.run(t, a, "dlq", "purge", "--yes"); r.code != 0 || !strings.Contains(r.stdout, "purge: deleted 1 of 1 messages") {
		t.Errorf("purge: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if left := s.receiveAll(t, dlq); len(left) != 0 {
		t.Errorf("%d messages left after purge", len(left))
	}
}

func TestVerifyRange(t *testing.T) {
	s := deployed(t)
	s.createBucket(t, "daybook-exports-clitest")
	acct := s.newAccount(t, nil)
	a, _, _ := testApp(t)
	r := s.run(t, a, "verify", "--account", acct.ID, "--from", "2026-11-27", "--to", "2026-11-29")
	if r.code != cli.ExitError || !strings.Contains(r.stdout, "3 partitions: 0 OK, 3 not committed, 0 with problems") || !strings.Contains(r.stderr, "3 of 3 partitions not verified") {
		t.Errorf("verify of a range nothing was exported to: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = s.run(t, a, "verify", "--account", acct.ID, "--dataset", "events", "--day", "2026-11-27", "-o", "json")
	var res []verified
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res) != 1 || res[0].Committed || r.code != cli.ExitError {
		t.Errorf("verify one day -o json: exit %d %+v\n%s", r.code, res, r.stdout)
	}
}

// TestRetryEveryDatasetWithASnapshot: retry without --dataset over a
// range, for an account that also receives a snapshot dataset (copied for
// the newest closed day only): the days of the other datasets are queued,
// the snapshot dataset takes the newest closed day alone when the range
// holds it and is left out otherwise, each said with why; a range that
// leaves every dataset out is refused, naming why. On the old code the
// whole request was refused because of the snapshot dataset.
func TestRetryEveryDatasetWithASnapshot(t *testing.T) {
	cat := datasettest.Catalog(t, append(example.YAML(), `
  - name: members
    version: 1
    partition: snapshot
    relation: members
    mode: full_refresh
    read: latest_snapshot
    tenant_column: org_id
    columns:
      - {name: email, type: string}
      - {name: attributes, type: json, nullable: true}
`...))
	s := deployed(t)
	s.catalog = cat
	ctx := context.Background()
	acct := s.newAccount(t, map[string]any{"datasets": []string{"events", "members"}})
	l := s.ledgerAt(t, testNow, 6)
	count := func(ds string) int {
		n, err := l.Partitions().Count(ctx, acct.ID, ds, firstDay, lastDay)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a, _, _ := testApp(t)
	r := s.run(t, a, "retry", "--account", acct.ID, "--from", "2026-11-20", "--to", "2026-11-22")
	if r.code != 0 || !strings.Contains(r.stdout, "made 3 partitions due (3 days 2026-11-20..2026-11-22, events)") ||
		!strings.Contains(r.stdout, "left out members: a snapshot dataset is copied for the newest closed day only (2026-11-29), which is outside 2026-11-20..2026-11-22") {
		t.Errorf("a range before the newest closed day: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if e, m := count("events"), count("members"); e != 3 || m != 0 {
		t.Errorf("rows: events %d, members %d; want 3 and 0", e, m)
	}

	r = s.run(t, a, "retry", "--account", acct.ID, "--from", "2026-11-28", "--to", "2026-11-29", "-o", "json")
	var res retried
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 || res.Queued != 3 || strings.Join(res.Datasets, ",") != "events,members" ||
		len(res.LeftOut) != 1 || res.LeftOut[0].Dataset != "members" || !strings.Contains(res.LeftOut[0].Reason, "2026-11-29 alone") {
		t.Errorf("a range ending on the newest closed day: exit %d %+v %v\n%s%s", r.code, res, err, r.stdout, r.stderr)
	}
	if m := count("members"); m != 1 {
		t.Errorf("members rows %d, want the newest closed day's", m)
	}
	// reexport alike: one request per day of events, one for members.
	queue := s.outputs["JobsQueueUrl"]
	s.purge(t, queue)
	r = s.run(t, a, "reexport", "--account", acct.ID, "--from", "2026-11-28", "--to", "2026-11-29")
	if r.code != 0 || !strings.Contains(r.stdout, "sent 3 re-export requests for "+acct.ID+" (events, members) 2026-11-28..2026-11-29") ||
		!strings.Contains(r.stdout, "left out members: a snapshot dataset is copied for the newest closed day only: 2026-11-29 alone") {
		t.Errorf("reexport of a range: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := len(s.receiveAll(t, queue)); n != 3 {
		t.Errorf("%d messages queued, want 3", n)
	}
	s.purge(t, queue)

	// --dataset names the snapshot: refused as ever; an account with the
	// snapshot alone has nothing to queue in an older range.
	if r := s.run(t, a, "retry", "--account", acct.ID, "--dataset", "members", "--day", "2026-11-20"); r.code != cli.ExitError || !strings.Contains(r.stderr, "is not the last closed day 2026-11-29") {
		t.Errorf("--dataset members --day 2026-11-20: exit %d\n%s", r.code, r.stderr)
	}
	only := s.newAccount(t, map[string]any{"datasets": []string{"members"}})
	if r := s.run(t, a, "retry", "--account", only.ID, "--from", "2026-11-20", "--to", "2026-11-22"); r.code != cli.ExitError ||
		!strings.Contains(r.stderr, "nothing to queue for account "+only.ID+": members: a snapshot dataset is copied for the newest closed day only") {
		t.Errorf("only a snapshot, an older range: exit %d\n%s", r.code, r.stderr)
	}
}

// TestReexportShowsRequested: a re-export shows from the moment its
// requests are sent, before an exporter claims them: `daybook status`
// marks each day sent (completed, failed) requested, with who asked, in
// its JSON, its map and its --state filter, and leaves a day under a live
// claim as it is (that claim is not disturbed; the exporter records the
// re-run when the request reaches it). The exporter's claim ends it. On
// the old code the completed day stayed "completed" until the claim, and
// --state requested was refused.
func TestReexportShowsRequested(t *testing.T) {
	s := deployed(t)
	ctx := context.Background()
	queue := s.outputs["JobsQueueUrl"]
	s.purge(t, queue)
	acct := s.newAccount(t, nil)
	l := s.ledgerAt(t, testNow, 6)
	done, failed, live := civil.MustParse("2026-11-20"), civil.MustParse("2026-11-21"), civil.MustParse("2026-11-22")
	if _, err := l.Schedule().Materialize(ctx, acct.ID, "events", done, live); err != nil {
		t.Fatal(err)
	}
	key := func(d civil.Date) partition.Key { return partition.Key{AccountID: acct.ID, Dataset: "events", Day: d} }
	for _, d := range []civil.Date{done, failed, live} {
		cl, err := l.Partitions().Claim(ctx, key(d), "")
		if err != nil {
			t.Fatal(err)
		}
		if d == live {
			continue // claimed, its job in the queue
		}
		if _, err := l.Partitions().Start(ctx, key(d), cl.Token); err != nil {
			t.Fatal(err)
		}
		if d == done {
			_, err = l.Partitions().Complete(ctx, key(d), cl.Token, ledger.Result{Rows: 5, Files: 1})
		} else {
			_, err = l.Partitions().Fail(ctx, key(d), cl.Token, errors.New("source unreachable"))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	a, _, _ := testApp(t)
	// The JSON as a script reads it.
	type day struct {
		Day                 string `json:"day"`
		State               string `json:"state"`
		Generation          int64  `json:"generation"`
		Rows                int64  `json:"rows"`
		ReexportRequestedAt string `json:"reexport_requested_at"`
		ReexportRequestedBy string `json:"reexport_requested_by"`
	}
	status := func() map[string]day {
		t.Helper()
		r := s.run(t, a, "status", "--account", acct.ID, "--from", "2026-11-20", "--to", "2026-11-22", "-o", "json")
		var res struct {
			Datasets []struct {
				Days []day `json:"days"`
			} `json:"datasets"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Datasets) != 1 {
			t.Fatalf("status -o json: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
		}
		days := map[string]day{}
		for _, d := range res.Datasets[0].Days {
			days[d.Day] = d
		}
		return days
	}
	if d := status(); d["2026-11-20"].State != "completed" || d["2026-11-21"].State != "failed" || d["2026-11-22"].State != "in-queue" {
		t.Fatalf("before the re-export: %+v", d)
	}

	r := s.run(t, a, "reexport", "--account", acct.ID, "--dataset", "events", "--from", "2026-11-20", "--to", "2026-11-22", "--requested-by", "ops-carol")
	if r.code != 0 {
		t.Fatalf("reexport: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	days := status()
	for _, d := range []string{"2026-11-20", "2026-11-21"} {
		if got := days[d]; got.State != "requested" || got.ReexportRequestedBy != "ops-carol" || got.ReexportRequestedAt != "2026-11-30T12:00:00Z" {
			t.Errorf("%s after the re-export: %+v; want requested by ops-carol at 2026-11-30T12:00:00Z", d, got)
		}
	}
	if got := days["2026-11-20"]; got.Generation != 1 || got.Rows != 5 {
		t.Errorf("the requested day keeps its delivered generation: %+v", got)
	}
	if got := days["2026-11-22"]; got.State != "in-queue" || got.ReexportRequestedAt != "" {
		t.Errorf("the day under a live claim: %+v; want it in the queue, untouched", got)
	}

	r = s.run(t, a, "status", "--account", acct.ID, "--from", "2026-11-20", "--to", "2026-11-22", "--state", "requested")
	for _, want := range []string{
		"events  ++  requested 2", // the filter keeps the two requested days
		"+ re-export requested, in the jobs queue",
		"events 2026-11-20  re-export requested by ops-carol at 2026-11-30T12:00:00Z",
	} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("status --state requested lacks %q: exit %d\n%s%s", want, r.code, r.stdout, r.stderr)
		}
	}

	// The exporter's claim takes the request: the day is running, no longer requested.
	if _, err := l.Partitions().ClaimManual(ctx, key(done), ledger.ManualRequest{By: "ops-carol"}); err != nil {
		t.Fatal(err)
	}
	if got := status()["2026-11-20"]; got.State != "running" || got.ReexportRequestedAt != "" {
		t.Errorf("after the exporter's claim: %+v", got)
	}
}
