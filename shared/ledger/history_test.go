package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/daybook-dev/daybook/shared/partition"
)

// outcomes summarizes a history as "attempt:outcome" strings.
func outcomes(as []Attempt) []string {
	var out []string
	for _, a := range as {
		out = append(out, string(rune('0'+a.Attempt))+":"+string(a.Outcome))
	}
	return out
}

func TestHistoryRecordsEveryAttemptOutcome(t *testing.T) {
	ctx := context.Background()
	c := newClock(t0)
	l, db := newTestLedger(t, c) // MaxAttempts 3
	key := partition.Key{AccountID: testAccount(t, "a"), Dataset: "events", Day: day1}
	if _, err := l.Schedule().Materialize(ctx, key.AccountID, key.Dataset, key.Day, key.Day); err != nil {
		t.Fatal(err)
	}
	run := func(fail bool) {
		t.Helper()
		cl, err := l.Partitions().Claim(ctx, key, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Partitions().Start(ctx, key, cl.Token); err != nil {
			t.Fatal(err)
		}
		c.Advance(90 * time.Second)
		if fail {
			if _, err := l.Partitions().Fail(ctx, key, cl.Token, errors.New("source timed out")); err != nil {
				t.Fatal(err)
			}
			c.Advance(7 * time.Hour) // past any backoff
			return
		}
		if _, err := l.Partitions().Complete(ctx, key, cl.Token, Result{Rows: 42, Bytes: 4200, Files: 2, ManifestKey: "m/_manifest.json", Duration: 90 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	run(true)
	run(false)

	// A started run whose exporter died: the next claim takes it over.
	if _, err := l.Partitions().Requeue(ctx, RequeueRange{AccountID: key.AccountID, Dataset: key.Dataset, From: key.Day, To: key.Day, Reason: partition.ReasonManual}); err != nil {
		t.Fatal(err)
	}
	cl, err := l.Partitions().Claim(ctx, key, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().Start(ctx, key, cl.Token); err != nil {
		t.Fatal(err)
	}
	c.Advance(testLease + time.Minute)
	run(true) // attempt 2 after the dead attempt 1
	run(true) // attempt 3: the last one, stopped

	h, err := l.Partitions().History(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1:failed", "2:completed", "1:lease_expired", "2:failed", "3:stopped"}
	if got := outcomes(h); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("history %v, want %v", got, want)
	}
	done := h[1]
	if done.Generation != 1 || done.Rows != 42 || done.Bytes != 4200 || done.Files != 2 || done.DurationMS != 90000 ||
		done.ManifestKey != "m/_manifest.json" || done.StartedAt.IsZero() || !done.FinishedAt.After(done.StartedAt) {
		t.Errorf("completed attempt %+v", done)
	}
	if h[0].Error != "source timed out" || h[4].Error != "source timed out" {
		t.Errorf("errors %q / %q", h[0].Error, h[4].Error)
	}
	if !strings.Contains(h[2].Error, "lease expired") {
		t.Errorf("dead claim error %q", h[2].Error)
	}

	// History items stay out of the due index and expire.
	out, err := db.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(l.Config().Table), KeyConditionExpression: aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(historyPK(key))},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range out.Items {
		if _, ok := it[AttrDueAccount]; ok {
			t.Errorf("history item %v is in the due index", it[AttrSK])
		}
		if _, ok := it[AttrExpiresAt].(*types.AttributeValueMemberN); !ok {
			t.Errorf("history item %v has no %s", it[AttrSK], AttrExpiresAt)
		}
	}
	if rows, err := l.Partitions().List(ctx, key.AccountID, key.Dataset, key.Day, key.Day); err != nil || len(rows) != 1 {
		t.Errorf("List sees %d rows (%v); history must not show up as rows", len(rows), err)
	}
}

func TestHistoryOfDeadClaimRetiredOnLastAttempt(t *testing.T) {
	ctx := context.Background()
	c := newClock(t0)
	l, _ := newTestLedger(t, c, func(cfg *Config) { cfg.MaxAttempts = 1 })
	key := partition.Key{AccountID: testAccount(t, "a"), Dataset: "events", Day: day1}
	if _, err := l.Schedule().Materialize(ctx, key.AccountID, key.Dataset, key.Day, key.Day); err != nil {
		t.Fatal(err)
	}
	cl, err := l.Partitions().Claim(ctx, key, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().Start(ctx, key, cl.Token); err != nil {
		t.Fatal(err)
	}
	c.Advance(testLease + time.Minute)
	if _, err := l.Partitions().Claim(ctx, key, ""); !errors.Is(err, ErrStopped) {
		t.Fatalf("claim of a dead last attempt: %v", err)
	}
	h, err := l.Partitions().History(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomes(h); len(got) != 1 || got[0] != "1:lease_expired" {
		t.Errorf("history %v", got)
	}
}

func TestHistoryOfManualClaimOverDeadClaim(t *testing.T) {
	ctx := context.Background()
	c := newClock(t0)
	l, _ := newTestLedger(t, c)
	key := partition.Key{AccountID: testAccount(t, "a"), Dataset: "events", Day: day1}
	if _, err := l.Schedule().Materialize(ctx, key.AccountID, key.Dataset, key.Day, key.Day); err != nil {
		t.Fatal(err)
	}
	cl, err := l.Partitions().Claim(ctx, key, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().Start(ctx, key, cl.Token); err != nil {
		t.Fatal(err)
	}
	c.Advance(testLease + time.Minute)
	m, err := l.Partitions().ClaimManual(ctx, key, ManualRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().Complete(ctx, key, m.Token, Result{Rows: 3}); err != nil {
		t.Fatal(err)
	}
	h, err := l.Partitions().History(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomes(h); strings.Join(got, " ") != "1:lease_expired 1:completed" {
		t.Errorf("history %v", got)
	}
	if h[1].Reason != partition.ReasonManual || h[1].Rows != 3 {
		t.Errorf("manual attempt %+v", h[1])
	}
}

// failingPut fails every PutItem on history items.
type failingPut struct{ DynamoAPI }

func (f failingPut) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if pk, _ := in.Item[AttrPK].(*types.AttributeValueMemberS); pk != nil && strings.HasPrefix(pk.Value, pkHistoryPrefix) {
		return nil, errors.New("throttled")
	}
	return f.DynamoAPI.PutItem(ctx, in, opts...)
}

func TestHistoryWriteFailureNeverFailsTheTransition(t *testing.T) {
	ctx := context.Background()
	c := newClock(t0)
	base, _ := newTestLedger(t, c)
	var rep reported
	cfg := base.Config()
	cfg.Report = rep.reporter()
	l, err := New(failingPut{base.db}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	key := partition.Key{AccountID: testAccount(t, "a"), Dataset: "events", Day: day1}
	if _, err := l.Schedule().Materialize(ctx, key.AccountID, key.Dataset, key.Day, key.Day); err != nil {
		t.Fatal(err)
	}
	cl, err := l.Partitions().Claim(ctx, key, "")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := l.Partitions().Complete(ctx, key, cl.Token, Result{Rows: 1}); err != nil || r.State != StateCompleted {
		t.Fatalf("complete with a failing history write: %v %v", r.State, err)
	}
	if w := rep.warnings(t); len(w) != 1 || w[0]["partition"] != key.String() || !strings.Contains(fmt.Sprint(w[0]["cause"]), "throttled") {
		t.Errorf("warnings %v, want one for %s with the cause", w, key)
	}
	if n := rep.counted(t, "HistoryWriteFailures"); n != 1 {
		t.Errorf("HistoryWriteFailures counted %v, want 1", n)
	}
}

// TestHistoryKeepsTwoRunsOfOneSecond: a manual re-export request delivered
// twice runs twice, each claim at attempt 1, and both may start in the same
// second: the history keeps both runs (two generations), where it kept
// the last one only.
func TestHistoryKeepsTwoRunsOfOneSecond(t *testing.T) {
	ctx := context.Background()
	c := newClock(t0)
	l, _ := newTestLedger(t, c)
	key := partition.Key{AccountID: testAccount(t, "a"), Dataset: "events", Day: day1}
	var gens []int64
	for range 2 { // the first manual claim creates the row
		m, err := l.Partitions().ClaimManual(ctx, key, ManualRequest{By: "ops-dan"})
		if err != nil {
			t.Fatal(err)
		}
		done, err := l.Partitions().Complete(ctx, key, m.Token, Result{Rows: 1})
		if err != nil {
			t.Fatal(err)
		}
		gens = append(gens, done.Generation)
	}
	h, err := l.Partitions().History(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, a := range h {
		got = append(got, a.Generation)
	}
	if fmt.Sprint(got) != fmt.Sprint(gens) || len(gens) != 2 || gens[0] == gens[1] {
		t.Errorf("history generations %v, want both runs' %v", got, gens)
	}
}
