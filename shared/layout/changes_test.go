package layout

import (
	"slices"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
)

// TestChangeKey: a change-log key is the same for the same generation, and
// keys sort by commit time first, whatever the dataset, day or generation,
// so a reader resumes with StartAfter.
func TestChangeKey(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 2, 14, 8, 0, time.FixedZone("x", 3600))
	day := civil.MustParse("2026-11-26")
	k := ChangeKey("tenants/acct_1/", at, "events", day, 2)
	if want := "tenants/acct_1/v1/_changes/20261130T011408Z_events_2026-11-26_0000000002.json"; k != want {
		t.Fatalf("ChangeKey = %s, want %s", k, want)
	}
	if ChangeKey("tenants/acct_1", at, "events", day, 2) != k {
		t.Errorf("the key depends on the prefix's trailing slash")
	}
	ordered := []string{
		ChangeKey("p", at, "profiles", day, 9),
		ChangeKey("p", at.Add(time.Second), "daily_stats", day.AddDays(-3), 1),
		ChangeKey("p", at.Add(time.Second), "events", day, 10),
		ChangeKey("p", at.Add(time.Hour), "events", day, 11),
	}
	if !slices.IsSorted(ordered) {
		t.Errorf("keys not in commit order: %q", ordered)
	}
	if got := ChangesPrefix("p/"); got != "p/v1/_changes/" || !Within(ordered[0], got) {
		t.Errorf("ChangesPrefix = %s", got)
	}
}
