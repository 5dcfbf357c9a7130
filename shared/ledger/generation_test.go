package ledger

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/partition"
)

// TestGenerationAfter: the claim, or one above a _SUCCESS up to
// MaxBucketLead ahead; further ahead (up to the largest int64, whatever
// the claim) is ErrBucketAhead naming the marker, never an overflow; a
// claim outside 1..MaxGeneration+1 is ErrGenerationRange, and a marker
// within the lead of a claim near the largest int64 is refused too (it
// overflowed to a negative generation before).
func TestGenerationAfter(t *testing.T) {
	for _, tc := range []struct {
		claimed, found, want int64 // want 0: ErrBucketAhead; -1: ErrGenerationRange
	}{
		{4, 0, 4},
		{4, 3, 4},
		{4, -7, 4},
		{4, 4, 5},
		{4, 4 + MaxBucketLead, 5 + MaxBucketLead},
		{4, 5 + MaxBucketLead, 0},
		{4, math.MaxInt64 - 1, 0},
		{4, math.MaxInt64, 0},
		{math.MinInt64, math.MaxInt64, -1},
		{0, 5, -1},
		{math.MaxInt64 - 3, math.MaxInt64, -1},
		{math.MaxInt64, math.MaxInt64, -1},
		{MaxGeneration + 2, MaxGeneration + 2, -1},
		{MaxGeneration, MaxGeneration, MaxGeneration + 1},
		{MaxGeneration, MaxGeneration + 1, 0},
		{MaxGeneration + 1, MaxGeneration + 1, 0},
	} {
		got, err := GenerationAfter(tc.claimed, tc.found, "s3://b/p/_SUCCESS")
		if tc.want == -1 {
			if !errors.Is(err, ErrGenerationRange) || got != 0 {
				t.Errorf("GenerationAfter(%d, %d) = %d, %v; want ErrGenerationRange", tc.claimed, tc.found, got, err)
			}
			continue
		}
		if tc.want == 0 {
			if !errors.Is(err, ErrBucketAhead) || !strings.Contains(err.Error(), "s3://b/p/_SUCCESS") || got != 0 {
				t.Errorf("GenerationAfter(%d, %d) = %d, %v; want ErrBucketAhead naming the marker", tc.claimed, tc.found, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("GenerationAfter(%d, %d) = %d, %v; want %d", tc.claimed, tc.found, got, err, tc.want)
		}
	}
}

// TestStoredGenerationsCannotOverflow: Complete and NoteCommitted refuse a
// generation above MaxGeneration (a run that believed a planted
// manifest's 2^63-1 stored it, and the next claim was numbered -2^63),
// naming it, and leave the row as it was; the next claim is numbered
// above what is stored.
func TestStoredGenerationsCannotOverflow(t *testing.T) {
	ctx := t.Context()
	l, _ := newTestLedger(t, newClock(t0))
	k := partition.Key{AccountID: testAccount(t, "g"), Dataset: "events", Day: day1}
	if _, err := l.Schedule().Materialize(ctx, k.AccountID, k.Dataset, day1, day1); err != nil {
		t.Fatal(err)
	}
	c, err := l.Partitions().Claim(ctx, k, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []int64{math.MaxInt64, MaxGeneration + 1, -3} {
		if _, err := l.Partitions().Complete(ctx, k, c.Token, Result{Rows: 1, Generation: g}); !errors.Is(err, ErrGenerationRange) || !strings.Contains(err.Error(), fmt.Sprint(g)) {
			t.Errorf("Complete with generation %d = %v, want ErrGenerationRange naming it", g, err)
		}
		if err := l.Partitions().NoteCommitted(ctx, k, c.Token, g); !errors.Is(err, ErrGenerationRange) {
			t.Errorf("NoteCommitted of generation %d = %v, want ErrGenerationRange", g, err)
		}
	}
	row, err := l.Partitions().Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if row.State != StateRunning || row.Generation != 0 || row.GenReserved != 0 {
		t.Fatalf("after the refusals: %+v", row)
	}
	if _, err := l.Partitions().Complete(ctx, k, c.Token, Result{Rows: 1, Generation: MaxGeneration}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().Requeue(ctx, RequeueRange{AccountID: k.AccountID, Dataset: k.Dataset, From: day1, To: day1, Reason: partition.ReasonManual}); err != nil {
		t.Fatal(err)
	}
	next, err := l.Partitions().Claim(ctx, k, "")
	if err != nil {
		t.Fatal(err)
	}
	if next.Generation != MaxGeneration+1 {
		t.Errorf("the claim after generation %d is numbered %d", MaxGeneration, next.Generation)
	}
}

// TestEverCommitted: a dataset of an account counts as delivered once a
// generation of it was committed (Complete) or found committed in the
// bucket (NoteCommitted), and each ledger name answers for itself.
func TestEverCommitted(t *testing.T) {
	ctx := context.Background()
	c := newClock(t0)
	l, _ := newTestLedger(t, c)
	acct := testAccount(t, "a")
	ever := func(ds string) bool {
		t.Helper()
		ok, err := l.Partitions().EverCommitted(ctx, acct, ds)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if ever("events") {
		t.Error("no rows: committed")
	}
	if _, err := l.Schedule().Materialize(ctx, acct, "events", day1, day1.AddDays(2)); err != nil {
		t.Fatal(err)
	}
	k := partition.Key{AccountID: acct, Dataset: "events", Day: day1.AddDays(1)}
	cl, err := l.Partitions().Claim(ctx, k, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().Start(ctx, k, cl.Token); err != nil {
		t.Fatal(err)
	}
	if ever("events") {
		t.Error("pending and running rows: committed")
	}
	if err := l.Partitions().NoteCommitted(ctx, k, cl.Token, 1); err != nil {
		t.Fatal(err)
	}
	if !ever("events") {
		t.Error("a generation found committed in the bucket: not committed")
	}
	if _, err := l.Partitions().Complete(ctx, k, cl.Token, Result{Rows: 1, Generation: 2}); err != nil {
		t.Fatal(err)
	}
	if !ever("events") || ever("events.v2") || ever("profiles") {
		t.Errorf("after Complete: events %v, events.v2 %v, profiles %v", ever("events"), ever("events.v2"), ever("profiles"))
	}
}
