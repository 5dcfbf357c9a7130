package ops

import (
	"fmt"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/manifest"
)

// TestGroupFailures: a bad bucket that failed 22 partitions is one group,
// destination_missing, with its explanation and fix and its raw error once;
// another cause is its own group; completed and running days are in none.
func TestGroupFailures(t *testing.T) {
	t.Parallel()
	missing := manifest.CauseText(manifest.CodeDestinationMissing, fmt.Errorf("operation error S3: PutObject, https response error StatusCode: 404, RequestID: X, api error NoSuchBucket: The specified bucket does not exist"))
	var events, stats DatasetDays
	events.Dataset, stats.Dataset = "events", "daily_stats"
	for i := range 11 {
		day := fmt.Sprintf("2026-11-%02d", i+1)
		state := Failed
		if i < 3 {
			state = Stopped
		}
		events.Days = append(events.Days, Day{Day: day, State: state, Error: missing})
		stats.Days = append(stats.Days, Day{Day: day, State: Failed, Error: missing})
	}
	stats.Days = append(stats.Days,
		Day{Day: "2026-11-20", State: Failed, Error: "source_unavailable: dial tcp 10.0.0.5:5432: i/o timeout"},
		Day{Day: "2026-11-21", State: Completed},
		Day{Day: "2026-11-22", State: Running})
	groups := GroupFailures([]DatasetDays{events, stats})
	if len(groups) != 2 {
		t.Fatalf("%d groups, want 2: %+v", len(groups), groups)
	}
	g := groups[0]
	if g.Code != manifest.CodeDestinationMissing || len(g.Partitions) != 22 || g.Stopped != 3 || len(g.Errors) != 1 ||
		g.What != "bucket does not exist" || !strings.Contains(g.Fix, "destination.bucket") || !strings.Contains(g.Fix, "retry") ||
		strings.HasPrefix(g.Errors[0], "destination_missing") {
		t.Errorf("bad bucket group %+v", g)
	}
	if g := groups[1]; g.Code != manifest.CodeSourceUnavailable || len(g.Partitions) != 1 || g.Errors[0] != "dial tcp 10.0.0.5:5432: i/o timeout" {
		t.Errorf("source group %+v", g)
	}
	for _, code := range manifest.Codes() {
		if code.IsCause() && (causes[code].what == "" || causes[code].fix == "") {
			t.Errorf("cause %s has no explanation or fix", code)
		}
	}
}

// TestGroupFailuresTableBroken: completed partitions whose Iceberg table did
// not take them are one group, table_broken, with its explanation, the
// repair as the fix and the raw error (naming the object and the repair
// command) behind it; a failed partition's cause is its own group.
func TestGroupFailuresTableBroken(t *testing.T) {
	t.Parallel()
	tableErr := manifest.CauseText(manifest.CodeTableBroken, fmt.Errorf("table object p/v1/events/metadata/v7.metadata.json: parse table metadata v7: unexpected end of JSON input"))
	tableErr += "; the day's files are delivered; repair the table: daybook table repair --account acct_x --dataset events"
	ds := DatasetDays{Dataset: "events", Days: []Day{
		{Day: "2026-11-20", State: Completed, TableError: tableErr},
		{Day: "2026-11-21", State: Completed, TableError: tableErr},
		{Day: "2026-11-22", State: Completed},
		{Day: "2026-11-23", State: Failed, Error: "source_unavailable: down", TableError: tableErr},
	}}
	groups := GroupFailures([]DatasetDays{ds})
	if len(groups) != 2 {
		t.Fatalf("%d groups: %+v", len(groups), groups)
	}
	g := groups[0]
	if g.Code != manifest.CodeTableBroken || len(g.Partitions) != 2 || g.Partitions[0].Phase != Completed || len(g.Errors) != 1 ||
		!strings.Contains(g.Errors[0], "v7.metadata.json") || !strings.Contains(g.Errors[0], "daybook table repair --account acct_x --dataset events") ||
		!strings.Contains(g.Fix, "daybook table repair") || g.What == "" {
		t.Fatalf("the table group: %+v", g)
	}
	if groups[1].Code != manifest.CodeSourceUnavailable {
		t.Fatalf("the failed partition's group: %+v", groups[1])
	}
	if d := Describe(ds.Days[0]); !strings.Contains(d, "its Iceberg table did not take it") {
		t.Fatalf("describe: %s", d)
	}
}
