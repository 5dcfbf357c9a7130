package ledger

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/partition"
)

// TestRequestedByIsRecorded: who asked for a requeue or a re-export is on
// the row, on every claim of it (the one the exporter writes into the
// manifest) and in the history of each attempt it caused; a scheduled day
// names nobody, and a later request replaces the requester.
func TestRequestedByIsRecorded(t *testing.T) {
	ctx := context.Background()
	c := newClock(t0)
	l, _ := newTestLedger(t, c)
	key := partition.Key{AccountID: testAccount(t, "a"), Dataset: "events", Day: day1}
	if _, err := l.Schedule().Materialize(ctx, key.AccountID, key.Dataset, key.Day, key.Day); err != nil {
		t.Fatal(err)
	}
	// Scheduled: nobody asked.
	cl, err := l.Partitions().Claim(ctx, key, "")
	if err != nil || cl.RequestedBy != "" {
		t.Fatalf("scheduled claim %+v, %v", cl, err)
	}
	if _, err := l.Partitions().Start(ctx, key, cl.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().Fail(ctx, key, cl.Token, errors.New("bucket does not exist")); err != nil {
		t.Fatal(err)
	}

	c.Advance(time.Minute)
	// A requeue by alice: the sweep's claim and its started run carry her.
	if _, err := l.Partitions().Requeue(ctx, RequeueRange{AccountID: key.AccountID, Dataset: key.Dataset, From: key.Day, To: key.Day, Reason: partition.ReasonManual, RequestedBy: "alice"}); err != nil {
		t.Fatal(err)
	}
	if row, err := l.Partitions().Get(ctx, key); err != nil || row.RequestedBy != "alice" {
		t.Fatalf("requeued row requested by %q, %v", row.RequestedBy, err)
	}
	cl, err = l.Partitions().Claim(ctx, key, "")
	if err != nil || cl.RequestedBy != "alice" {
		t.Fatalf("claim of alice's requeue %+v, %v", cl, err)
	}
	st, err := l.Partitions().Start(ctx, key, cl.Token)
	if err != nil || st.RequestedBy != "alice" {
		t.Fatalf("started claim %+v, %v", st, err)
	}
	c.Advance(time.Minute)
	if _, err := l.Partitions().Complete(ctx, key, cl.Token, Result{Rows: 3}); err != nil {
		t.Fatal(err)
	}

	// A re-export by bob.
	m, err := l.Partitions().ClaimManual(ctx, key, ManualRequest{By: "bob"})
	if err != nil || m.RequestedBy != "bob" {
		t.Fatalf("manual claim %+v, %v", m, err)
	}
	c.Advance(time.Minute)
	if _, err := l.Partitions().Complete(ctx, key, m.Token, Result{Rows: 4}); err != nil {
		t.Fatal(err)
	}
	h, err := l.Partitions().History(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range h {
		got = append(got, string(a.Outcome)+":"+a.RequestedBy)
	}
	if want := "failed: completed:alice completed:bob"; strings.Join(got, " ") != want {
		t.Errorf("history requesters %q, want %q", strings.Join(got, " "), want)
	}
	// A re-export with nobody named clears bob.
	if m, err = l.Partitions().ClaimManual(ctx, key, ManualRequest{}); err != nil || m.RequestedBy != "" {
		t.Fatalf("anonymous manual claim %+v, %v", m, err)
	}
	if row, err := l.Partitions().Get(ctx, key); err != nil || row.RequestedBy != "" {
		t.Errorf("row after an anonymous re-export requested by %q, %v", row.RequestedBy, err)
	}
}
