package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// TestReseed: `daybook reseed` runs the exporter's own check before it
// sends anything (events and daily_stats are refused with a pointer to
// reexport), sends one reseed request, refuses while a reseed of the
// dataset runs, and shows the reseed with --status.
func TestReseed(t *testing.T) {
	s := deployed(t)
	queue := s.outputs["JobsQueueUrl"]
	s.purge(t, queue)
	acct := s.newAccount(t, map[string]any{"datasets": []string{"events", "profiles"}})
	eventsOnly := s.newAccount(t, nil)
	a, _, _ := testApp(t)

	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"events", []string{"--account", acct.ID, "--dataset", "events"}, cli.ExitError,
			`--dataset "events" is read as a union of immutable days (what a day means: event_time; read: union_all_partitions): a reseed only applies to incremental feeds of states such as profiles; re-export the days that changed instead (daybook reexport)`},
		{"daily stats", []string{"--account", acct.ID, "--dataset", "daily_stats"}, cli.ExitError, `--dataset "daily_stats" is read as a union of immutable days`},
		{"not exported", []string{"--account", eventsOnly.ID, "--dataset", "profiles"}, cli.ExitError, `--dataset "profiles" is not enabled for account ` + eventsOnly.ID},
		{"no such account", []string{"--account", "acct_nosuchaccount234", "--dataset", "profiles"}, cli.ExitError, `--account "acct_nosuchaccount234" is not an account`},
		{"malformed account", []string{"--account", "acct_a", "--dataset", "profiles"}, cli.ExitUsage, `--account "acct_a" is not an account id`},
		{"unknown dataset", []string{"--account", acct.ID, "--dataset", "visits"}, cli.ExitUsage, `--dataset "visits": unknown dataset`},
		{"no dataset", []string{"--account", acct.ID}, cli.ExitUsage, `--dataset is required`},
		{"never reseeded", []string{"--account", acct.ID, "--dataset", "profiles", "--status"}, cli.ExitError, "profiles of account " + acct.ID + " was never reseeded"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := s.run(t, a, append([]string{"reseed"}, tt.args...)...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("exit %d, want %d; stderr lacks %q:\n%s", r.code, tt.code, tt.stderr, r.stderr)
			}
		})
	}
	if msgs := s.receiveAll(t, queue); len(msgs) != 0 {
		t.Fatalf("refused reseeds sent %d messages", len(msgs))
	}

	r := s.run(t, a, "reseed", "--account", acct.ID, "--dataset", "profiles", "-o", "json", "--requested-by", "ticket OPS-7")
	var sent reseedSent
	if err := json.Unmarshal([]byte(r.stdout), &sent); err != nil || r.code != 0 {
		t.Fatalf("reseed: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	// The account starts 2026-11-01; at testNow the last closed day is 2026-11-29.
	if sent.From != "2026-11-01" || sent.Through != "2026-11-29" || sent.Days != 29 || sent.MessageID == "" {
		t.Errorf("sent %+v", sent)
	}
	msgs := s.receiveAll(t, queue)
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	m, err := jobs.Parse(datasettest.Example(t), aws.ToString(msgs[0].Body))
	if err != nil || m.Reseed == nil || m.Reseed.AccountID != acct.ID || m.Reseed.Dataset != "profiles" || m.Reseed.RequestedBy != "ticket OPS-7" || m.Reseed.RequestID == "" {
		t.Fatalf("message %s: %+v %v", aws.ToString(msgs[0].Body), m.Reseed, err)
	}

	// The exporter starts the epoch; a second reseed is refused while it runs.
	l := s.ledgerAt(t, testNow, 6)
	if _, _, err := l.Seeds().StartReseed(context.Background(), ledger.ReseedRequest{AccountID: acct.ID, Dataset: "profiles",
		From: civil.MustParse(sent.From), Through: civil.MustParse(sent.Through), RequestID: m.Reseed.RequestID, RequestedBy: m.Reseed.RequestedBy}); err != nil {
		t.Fatal(err)
	}
	r = s.run(t, a, "reseed", "--account", acct.ID, "--dataset", "profiles")
	if r.code != cli.ExitError || !strings.Contains(r.stderr, "a reseed of profiles for account "+acct.ID+" is running (epoch 1") {
		t.Errorf("a reseed while one runs: exit %d\n%s", r.code, r.stderr)
	}
	if msgs := s.receiveAll(t, queue); len(msgs) != 0 {
		t.Fatalf("a refused reseed sent %d messages", len(msgs))
	}
	r = s.run(t, a, "reseed", "--account", acct.ID, "--dataset", "profiles", "--status")
	if want := "profiles of account " + acct.ID + ": seed epoch 1 running, 0 of 29 days rebuilt (2026-11-01..2026-11-29)"; r.code != 0 || !strings.Contains(r.stdout, want) ||
		!strings.Contains(r.stdout, "requested by ticket OPS-7") {
		t.Errorf("--status: exit %d, want %q\n%s%s", r.code, want, r.stdout, r.stderr)
	}
	r = s.run(t, a, "reseed", "--account", acct.ID, "--dataset", "profiles", "--status", "-o", "json")
	var v seedView
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Epoch != 1 || v.State != "running" || v.Days != 29 || v.CompletedAt != nil {
		t.Errorf("--status -o json: %+v %v\n%s", v, err, r.stdout)
	}
}
