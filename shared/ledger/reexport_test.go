package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

// TestReexportRequestNote: NoteReexportRequested puts a day at rest
// (completed, failed, stopped, pending) in the requested phase, with who
// asked, without changing its state, due key or stopped entry; it leaves a
// day under a live claim and a day without a row alone. The transitions
// that take a request (ClaimManual, the re-run it records on a live claim,
// Requeue) remove the note, and so does ClearReexportRequest, but only for
// the note it names. A requested day that was completed still counts as
// delivered in the account's summary.
func TestReexportRequestNote(t *testing.T) {
	ctx := context.Background()
	c := newClock(t0)
	l, _ := newTestLedger(t, c, func(cfg *Config) { cfg.MaxAttempts = 1 })
	acct := testAccount(t, "a")
	days := civil.Range(day1, day1.AddDays(4)) // completed, stopped, live claim, pending, no row
	done, stopped, live, pending, none := days[0], days[1], days[2], days[3], days[4]
	key := func(d civil.Date) partition.Key { return partition.Key{AccountID: acct, Dataset: "events", Day: d} }
	if _, err := l.Schedule().Materialize(ctx, acct, "events", done, pending); err != nil {
		t.Fatal(err)
	}
	for _, d := range []civil.Date{done, stopped, live} {
		cl, err := l.Partitions().Claim(ctx, key(d), "")
		if err != nil {
			t.Fatal(err)
		}
		if d == live {
			continue
		}
		if _, err := l.Partitions().Start(ctx, key(d), cl.Token); err != nil {
			t.Fatal(err)
		}
		if d == done {
			_, err = l.Partitions().Complete(ctx, key(d), cl.Token, Result{Rows: 3})
		} else {
			_, err = l.Partitions().Fail(ctx, key(d), cl.Token, errors.New("source_unavailable: down"))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	stoppedBefore, _, err := l.Schedule().StoppedByAccount(ctx, Shard(acct))
	if err != nil || stoppedBefore[acct] != 1 {
		t.Fatalf("stopped entries %v %v", stoppedBefore, err)
	}
	before := map[civil.Date]Row{}
	for _, d := range days[:4] {
		before[d] = get(t, l, key(d))
	}

	c.Advance(time.Minute)
	note, err := l.Partitions().NoteReexportRequested(ctx, acct, "events", days, "ops-erin")
	if err != nil {
		t.Fatal(err)
	}
	if len(note.Noted) != 3 || note.Noted[0] != done || note.Noted[1] != stopped || note.Noted[2] != pending || note.By != "ops-erin" || !note.At.Equal(c.Now()) {
		t.Fatalf("note %+v; want done, stopped and pending noted at %s", note, c.Now())
	}
	for _, d := range []civil.Date{done, stopped, pending} {
		r := get(t, l, key(d))
		if PhaseOf(r) != PhaseRequested || !r.ReexportRequestedAt.Equal(note.At) || r.ReexportRequestedBy != "ops-erin" {
			t.Errorf("%s: phase %s, %+v", d, PhaseOf(r), r)
		}
		if b := before[d]; r.State != b.State || r.DueKey != b.DueKey || r.Generation != b.Generation || r.Attempts != b.Attempts {
			t.Errorf("%s: the note changed the row: %+v, was %+v", d, r, b)
		}
	}
	if r := get(t, l, key(live)); PhaseOf(r) != PhaseClaimed || !r.ReexportRequestedAt.IsZero() || r.ClaimToken != before[live].ClaimToken {
		t.Errorf("the live claim: phase %s, %+v", PhaseOf(r), r)
	}
	if _, err := l.Partitions().Get(ctx, key(none)); !errors.Is(err, ErrNotFound) {
		t.Errorf("a day without a row got one: %v", err)
	}
	if got, _, err := l.Schedule().StoppedByAccount(ctx, Shard(acct)); err != nil || got[acct] != 1 {
		t.Errorf("the note moved the stopped entry: %v %v", got, err)
	}
	a := account.Account{ID: acct, Name: "n", Enabled: true, StartDate: day1, Datasets: []string{"events"}}
	s := Summarize(a, []Row{get(t, l, key(done))}, nil, c.Now())
	if s.Counts[PhaseRequested] != 1 || s.OldestDue != "" || s.LastExport != done.String() {
		t.Errorf("summary of the requested completed day: %+v", s)
	}

	// Another note clears nothing; the one that was written does.
	if err := l.Partitions().ClearReexportRequest(ctx, key(pending), ReexportNote{At: note.At, By: "ops-frank"}); err != nil {
		t.Fatal(err)
	}
	if r := get(t, l, key(pending)); r.ReexportRequestedAt.IsZero() {
		t.Errorf("another sender's note cleared this one")
	}
	if err := l.Partitions().ClearReexportRequest(ctx, key(pending), note); err != nil {
		t.Fatal(err)
	}
	if r := get(t, l, key(pending)); PhaseOf(r) != PhaseQueued || !r.ReexportRequestedAt.IsZero() || r.ReexportRequestedBy != "" {
		t.Errorf("after the clear: phase %s, %+v", PhaseOf(r), r)
	}
	// The zero note (the exporter's refusal) clears any; a day without one
	// or without a row is left alone.
	if err := l.Partitions().ClearReexportRequest(ctx, key(none), ReexportNote{}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().Get(ctx, key(none)); !errors.Is(err, ErrNotFound) {
		t.Errorf("a clear created a row: %v", err)
	}

	// The exporter's claim takes it; so does Requeue.
	if _, err := l.Partitions().ClaimManual(ctx, key(done), ManualRequest{By: "ops-erin"}); err != nil {
		t.Fatal(err)
	}
	if r := get(t, l, key(done)); PhaseOf(r) != PhaseRunning || !r.ReexportRequestedAt.IsZero() {
		t.Errorf("after ClaimManual: phase %s, %+v", PhaseOf(r), r)
	}
	if _, err := l.Partitions().Requeue(ctx, RequeueRange{AccountID: acct, Dataset: "events", From: stopped, To: stopped, Reason: partition.ReasonManual}); err != nil {
		t.Fatal(err)
	}
	if r := get(t, l, key(stopped)); PhaseOf(r) != PhaseQueued || !r.ReexportRequestedAt.IsZero() {
		t.Errorf("after Requeue: phase %s, %+v", PhaseOf(r), r)
	}
	// A request that reaches a live claim is recorded as its re-run, and
	// takes a note left from before the claim.
	if _, err := l.Partitions().NoteReexportRequested(ctx, acct, "events", []civil.Date{stopped}, "ops-erin"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().Claim(ctx, key(stopped), ""); err != nil {
		t.Fatal(err)
	}
	if r := get(t, l, key(stopped)); PhaseOf(r) != PhaseClaimed {
		t.Errorf("a live claim with a note: phase %s", PhaseOf(r))
	}
	if _, err := l.Partitions().ClaimManual(ctx, key(stopped), ManualRequest{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("ClaimManual on a live claim: %v", err)
	}
	if r := get(t, l, key(stopped)); !r.RerunRequested || !r.ReexportRequestedAt.IsZero() {
		t.Errorf("after the re-run was recorded: %+v", r)
	}
}

func get(t *testing.T, l *Ledger, k partition.Key) Row {
	t.Helper()
	r, err := l.Partitions().Get(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestManualRequestServedOnce: a request with an id (the note's, which its
// messages carry) is served once per day, as a claim or as the re-run of a
// live claim; the same request again, SQS sending its message twice, is
// ErrServed and changes nothing, while the claim runs and after it
// completed. Another request, another day of the same request (a range
// fanned out) and a message written by hand (no id) are served as before.
func TestManualRequestServedOnce(t *testing.T) {
	ctx := context.Background()
	c := newClock(t0)
	l, _ := newTestLedger(t, c)
	acct := testAccount(t, "a")
	day, other := day1, day1.AddDays(1)
	key := func(d civil.Date) partition.Key { return partition.Key{AccountID: acct, Dataset: "events", Day: d} }
	note, err := l.Partitions().NoteReexportRequested(ctx, acct, "events", []civil.Date{day, other}, "ops-erin")
	if err != nil || len(note.ID) != 32 || len(note.Noted) != 0 {
		t.Fatalf("note of days without rows: %+v, %v", note, err)
	}
	req := ManualRequest{By: "ops-erin", ID: note.ID}
	first, err := l.Partitions().ClaimManual(ctx, key(day), req)
	if err != nil || first.Generation != 1 {
		t.Fatalf("first claim: %+v, %v", first, err)
	}
	served := func(when string) {
		t.Helper()
		before := get(t, l, key(day))
		_, err := l.Partitions().ClaimManual(ctx, key(day), req)
		if !errors.Is(err, ErrServed) {
			t.Fatalf("%s: the same request again: %v, want ErrServed", when, err)
		}
		var se *ServedError
		if !errors.As(err, &se) || se.Row.Key != key(day) || se.Row.State != before.State || se.Row.ClaimToken != before.ClaimToken || se.RequestID != req.ID {
			t.Errorf("%s: the refusal does not carry the row as it stands: %+v", when, se)
		}
		if after := get(t, l, key(day)); after.ClaimToken != before.ClaimToken || after.State != before.State ||
			after.RerunRequested != before.RerunRequested || !after.UpdatedAt.Equal(before.UpdatedAt) {
			t.Errorf("%s: the served request changed the row:\n%+v\nwas\n%+v", when, after, before)
		}
	}
	c.Advance(time.Second)
	served("while its claim runs")
	if _, err := l.Partitions().Complete(ctx, key(day), first.Token, Result{Rows: 1, Generation: 1}); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Second)
	served("after its claim completed")
	if r := get(t, l, key(day)); r.State != StateCompleted || r.Generation != 1 {
		t.Errorf("row after the request sent twice: %s generation %d", r.State, r.Generation)
	}
	// The same request's other day is its own.
	if cl, err := l.Partitions().ClaimManual(ctx, key(other), req); err != nil || cl.Generation != 1 {
		t.Errorf("the request's other day: %+v, %v", cl, err)
	}
	// A new request claims; a third, reaching that live claim, records its
	// re-run once.
	note2, err := l.Partitions().NoteReexportRequested(ctx, acct, "events", []civil.Date{day}, "ops-dan")
	if err != nil || note2.ID == note.ID {
		t.Fatalf("second note: %+v (first id %s), %v", note2, note.ID, err)
	}
	second, err := l.Partitions().ClaimManual(ctx, key(day), ManualRequest{By: "ops-dan", ID: note2.ID})
	if err != nil || second.Generation != 2 {
		t.Fatalf("second request: %+v, %v", second, err)
	}
	note3, err := l.Partitions().NoteReexportRequested(ctx, acct, "events", []civil.Date{day}, "ops-dan")
	if err != nil {
		t.Fatal(err)
	}
	req = ManualRequest{By: "ops-dan", ID: note3.ID}
	if _, err := l.Partitions().ClaimManual(ctx, key(day), req); !errors.Is(err, ErrBusy) {
		t.Fatalf("third request on a live claim: %v, want ErrBusy", err)
	}
	served("its re-run recorded")
	if r := get(t, l, key(day)); !r.RerunRequested || r.ClaimToken != second.Token {
		t.Errorf("after the re-run: %+v", r)
	}
	// A late copy of the first request, after two others took the day, is
	// served already too.
	req = ManualRequest{By: "ops-erin", ID: note.ID}
	served("a late copy after other requests")
	// A message written by hand has no id: it is recorded every time.
	for range 2 {
		if _, err := l.Partitions().ClaimManual(ctx, key(day), ManualRequest{By: "ops-dan"}); !errors.Is(err, ErrBusy) {
			t.Fatalf("a request without an id on a live claim: %v, want ErrBusy", err)
		}
	}
}

// TestServedRequestsBounded: a row keeps the ids of its last servedCap
// requests; the next request starts the set again, so a copy of a request
// older than that runs once more (the documented bound), while the newest
// is still served once. A row whose one served id was written before the
// set (reexport_served) still refuses that request.
func TestServedRequestsBounded(t *testing.T) {
	ctx := context.Background()
	c := newClock(t0)
	l, db := newTestLedger(t, c)
	acct := testAccount(t, "a")
	key := partition.Key{AccountID: acct, Dataset: "events", Day: day1}
	id := func(i int) ManualRequest { return ManualRequest{By: "ops-erin", ID: fmt.Sprintf("request-%02d", i)} }
	run := func(i int) {
		t.Helper()
		cl, err := l.Partitions().ClaimManual(ctx, key, id(i))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if _, err := l.Partitions().Complete(ctx, key, cl.Token, Result{Rows: 1, Generation: cl.Generation}); err != nil {
			t.Fatalf("request %d: complete: %v", i, err)
		}
		c.Advance(time.Second)
	}
	servedAlready := func(i int) bool {
		t.Helper()
		_, err := l.Partitions().ClaimManual(ctx, key, id(i))
		if err != nil && !errors.Is(err, ErrServed) {
			t.Fatalf("request %d again: %v", i, err)
		}
		return err != nil
	}
	// The pages that state the bound state this one.
	for _, page := range []string{"../../docs/architecture.md", "../../docs/upgrading.md"} {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("the last %d requests", servedCap); !strings.Contains(strings.Join(strings.Fields(string(b)), " "), want) {
			t.Errorf("%s does not say %q", page, want)
		}
	}
	for i := range servedCap {
		run(i)
	}
	for _, i := range []int{0, servedCap / 2, servedCap - 1} {
		if !servedAlready(i) {
			t.Fatalf("request %d of %d ran again", i, servedCap)
		}
	}
	run(servedCap) // the set is full: it starts again with this request
	servedIDs := func() []string {
		t.Helper()
		item, err := l.getItem(ctx, rowKey(key))
		if err != nil {
			t.Fatal(err)
		}
		var r rowRecord
		if err := attributevalue.UnmarshalMap(item, &r); err != nil {
			t.Fatal(err)
		}
		return r.ReexportsServed
	}
	if ids := servedIDs(); len(ids) != 1 || ids[0] != id(servedCap).ID {
		t.Errorf("served ids after the set started again: %v", ids)
	}
	if !servedAlready(servedCap) {
		t.Errorf("the request that started the set again ran again")
	}
	if servedAlready(0) { // older than the set: runs once more
		t.Errorf("a request older than the set was refused")
	}
	if ids := servedIDs(); len(ids) != 2 {
		t.Errorf("served ids: %v", ids)
	}

	// A row served by the version before the set keeps one id as a string.
	if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(l.cfg.Table), Key: rowKey(key),
		UpdateExpression:          aws.String("SET #a = :v"),
		ExpressionAttributeNames:  map[string]string{"#a": attrReexportServed},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("request-legacy")},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().ClaimManual(ctx, key, ManualRequest{ID: "request-legacy"}); !errors.Is(err, ErrServed) {
		t.Errorf("the request a row served before the set: %v, want ErrServed", err)
	}
}
