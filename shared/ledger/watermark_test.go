package ledger

import (
	"context"
	"sync"
	"testing"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

func TestMaterializeConcurrentlyCreatesOnce(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	acct := testAccount(t, "a")
	from, to := civil.MustParse("2026-01-01"), civil.MustParse("2026-02-09") // 40 days
	var wg sync.WaitGroup
	counts := make([]int, 3)
	for i := range counts {
		wg.Go(func() {
			n, err := l.Schedule().Materialize(ctx, acct, "events", from, to)
			if err != nil {
				t.Error(err)
			}
			counts[i] = n
		})
	}
	wg.Wait()
	if total := counts[0] + counts[1] + counts[2]; total != 40 {
		t.Errorf("created %v = %d rows, want 40", counts, total)
	}
	rows, err := l.Partitions().List(ctx, acct, "events", from, to)
	if err != nil || len(rows) != 40 {
		t.Fatalf("list %d %v", len(rows), err)
	}
	if rows[0].Reason != partition.ReasonBackfill || rows[39].Reason != partition.ReasonScheduled || rows[0].Day != from {
		t.Errorf("reasons/order: first %+v last %+v", rows[0], rows[39])
	}
}

func TestWatermarkOnlyMovesForward(t *testing.T) {
	ctx := context.Background()
	l, _ := newTestLedger(t, newClock(t0))
	acct := testAccount(t, "a")
	if d, err := l.Schedule().Watermark(ctx, acct, "events"); err != nil || !d.IsZero() {
		t.Fatalf("initial watermark %v %v", d, err)
	}
	steps := []struct {
		to    string
		moved bool
		want  string
	}{{"2026-03-05", true, "2026-03-05"}, {"2026-03-04", false, "2026-03-05"}, {"2026-03-05", false, "2026-03-05"}, {"2026-03-06", true, "2026-03-06"}}
	for _, s := range steps {
		moved, err := l.Schedule().AdvanceWatermark(ctx, acct, "events", civil.MustParse(s.to))
		if err != nil || moved != s.moved {
			t.Errorf("advance to %s: moved %v err %v, want %v", s.to, moved, err, s.moved)
		}
		if d, _ := l.Schedule().Watermark(ctx, acct, "events"); d.String() != s.want {
			t.Errorf("after %s watermark %s, want %s", s.to, d, s.want)
		}
	}
}
