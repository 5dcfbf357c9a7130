package manifest

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/daybook-dev/daybook/shared/dataset"
)

func mustDS(t *testing.T, name string) *dataset.Dataset {
	t.Helper()
	ds, err := datasettest.Example(t).Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return &ds
}

func TestNewDelivery(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.FixedZone("X", 3600))
	done := time.Date(2026, 3, 10, 11, 0, 0, 0, time.UTC)
	events, profiles, stats := mustDS(t, "events"), mustDS(t, "profiles"), mustDS(t, "daily_stats")
	completed := PartitionStatus{Name: "events", Dataset: events, Exists: true, State: "completed", Generation: 2,
		Rows: 10, Files: 1, ManifestKey: "p/v1/events/dt=2026-03-09/_manifest.json", CompletedAt: done, Reason: "manual"}

	const pgErr = "source_unavailable: sql source pgx: query dataset daily_stats day 2026-03-09: failed to connect to `user=daybook_ro database=prod`: 10.1.2.3:5432 (db.internal): dial error"
	for _, tc := range []struct {
		name   string
		st     PartitionStatus
		code   Code // "" means delivered
		cause  Code
		reason string
	}{
		{"completed", completed, "", "", ""},
		{"absent", PartitionStatus{Name: "profiles", Dataset: profiles}, CodeNotExportedYet, "", CodeNotExportedYet.Sentence()},
		{"pending", PartitionStatus{Name: "profiles", Dataset: profiles, Exists: true, State: "pending"}, CodeNotExportedYet, "", CodeNotExportedYet.Sentence()},
		{"queued first time", PartitionStatus{Name: "profiles", Dataset: profiles, Exists: true, State: "queued"}, CodeNotExportedYet, "", CodeNotExportedYet.Sentence()},
		{"queued re-export", PartitionStatus{Name: "profiles", Dataset: profiles, Exists: true, State: "queued", Generation: 3},
			CodeQueuedForReexport, "", CodeQueuedForReexport.Sentence()},
		{"running", PartitionStatus{Name: "daily_stats", Dataset: stats, Exists: true, State: "running", Generation: 1}, CodeRunning, "", CodeRunning.Sentence()},
		{"failed reading the source", PartitionStatus{Name: "daily_stats", Dataset: stats, Exists: true, State: "failed", Attempts: 3, LastError: pgErr},
			CodeSourceUnavailable, CodeSourceUnavailable, CodeSourceUnavailable.Sentence() + " Attempt 3 failed; it will be retried automatically."},
		{"failed with an uncoded error", PartitionStatus{Name: "daily_stats", Dataset: stats, Exists: true, State: "failed", Attempts: 1, LastError: "boom: at 10.0.0.1"},
			CodeInternal, CodeInternal, CodeInternal.Sentence() + " Attempt 1 failed; it will be retried automatically."},
		{"dead claim on its last attempt", PartitionStatus{Name: "daily_stats", Dataset: stats, Exists: true, State: "failed", Attempts: 6, Stopped: true,
			LastError: "claim lease expired at 2026-03-10T10:00:00Z on attempt 6 of 6"},
			CodeStoppedRetrying, CodeTimedOut, CodeStoppedRetrying.Sentence() + " Attempts: 6. Last failure: " + CodeTimedOut.Sentence()},
		{"stopped", PartitionStatus{Name: "daily_stats", Dataset: stats, Exists: true, State: "failed", Attempts: 6, Stopped: true, LastError: pgErr},
			CodeStoppedRetrying, CodeSourceUnavailable, CodeStoppedRetrying.Sentence() + " Attempts: 6. Last failure: " + CodeSourceUnavailable.Sentence()},
		{"unknown dataset", PartitionStatus{Name: "visitors", Exists: true, State: "completed"}, CodeInternal, "", CodeInternal.Sentence() + " This dataset is not in this deployment's catalog."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDelivery("acct_x", "2026-03-09", []PartitionStatus{tc.st}, now)
			if d.UpdatedAt != now.UTC() || d.AccountID != "acct_x" || d.Day != "2026-03-09" || d.Contract != "v1" || d.FormatVersion != 1 {
				t.Errorf("header %+v", d)
			}
			if tc.code == "" {
				if !d.Complete || len(d.DatasetsDelivered) != 1 || len(d.DatasetsMissing) != 0 {
					t.Fatalf("want delivered: %+v", d)
				}
				want := DeliveredDataset{Name: "events", Contract: "v1", SchemaVersion: 1, Generation: 2, Mode: "incremental_append",
					Read: "union_all_partitions", Rows: 10, Files: 1, Manifest: completed.ManifestKey, CommittedAt: done}
				if got := d.DatasetsDelivered[0]; got != want {
					t.Errorf("delivered\n got %+v\nwant %+v", got, want)
				}
				return
			}
			if d.Complete || len(d.DatasetsDelivered) != 0 || len(d.DatasetsMissing) != 1 {
				t.Fatalf("want missing: %+v", d)
			}
			want := MissingDataset{Name: tc.st.Name, State: tc.st.State, Code: tc.code, Cause: tc.cause, Reason: tc.reason}
			if m := d.DatasetsMissing[0]; m != want {
				t.Errorf("missing\n got %+v\nwant %+v", m, want)
			}
			// Nothing of the raw error reaches the customer's bucket.
			b, _ := d.Encode()
			for _, internal := range []string{"daybook_ro", "prod", "10.1.2.3", "db.internal", "boom", "sql source", "10.0.0.1", "lease expired"} {
				if strings.Contains(string(b), internal) {
					t.Errorf("delivery manifest holds %q:\n%s", internal, b)
				}
			}
		})
	}

	t.Run("reseed", func(t *testing.T) {
		// reseed says a rebuild runs over the day, whatever the reason of
		// the generation: it clears once the rebuild completes.
		for _, tc := range []struct {
			reason        string
			running, want bool
		}{{ReasonReseed, true, true}, {ReasonReseed, false, false}, {"scheduled", true, true}, {"scheduled", false, false}} {
			st := completed
			st.Reason, st.Reseed = tc.reason, tc.running
			if d := NewDelivery("a", "2026-03-09", []PartitionStatus{st}, now); d.DatasetsDelivered[0].Reseed != tc.want {
				t.Errorf("reason %s, rebuild running %v: reseed %v", tc.reason, tc.running, d.DatasetsDelivered[0].Reseed)
			}
			st.State = "queued"
			if d := NewDelivery("a", "2026-03-09", []PartitionStatus{st}, now); d.DatasetsMissing[0].Reseed != tc.want {
				t.Errorf("queued, reason %s, rebuild running %v: reseed %v", tc.reason, tc.running, d.DatasetsMissing[0].Reseed)
			}
		}
	})
	t.Run("no datasets is not complete", func(t *testing.T) {
		d := NewDelivery("a", "2026-03-09", nil, now)
		b, _ := d.Encode()
		if d.Complete || !strings.Contains(string(b), `"datasets_delivered": []`) || !strings.Contains(string(b), `"datasets_missing": []`) {
			t.Errorf("%s", b)
		}
	})
	t.Run("round trip and equivalence", func(t *testing.T) {
		d := NewDelivery("a", "2026-03-09", []PartitionStatus{completed, {Name: "profiles", Dataset: profiles}}, now)
		b, err := d.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeDelivery(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, d) {
			t.Errorf("round trip\n got %+v\nwant %+v", back, d)
		}
		later := NewDelivery("a", "2026-03-09", []PartitionStatus{completed, {Name: "profiles", Dataset: profiles}}, now.Add(time.Hour))
		if !d.Equivalent(later) {
			t.Error("deliveries differing only in updated_at are not equivalent")
		}
		other := NewDelivery("a", "2026-03-09", []PartitionStatus{completed}, now)
		if d.Equivalent(other) {
			t.Error("different deliveries are equivalent")
		}
		if _, err := DecodeDelivery([]byte(`{"format_version":9}`)); err == nil {
			t.Error("format_version 9 accepted")
		}
	})
}

func TestCodes(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, c := range Codes() {
		if c.Sentence() == "" || !strings.HasSuffix(c.Sentence(), ".") || seen[string(c)] {
			t.Errorf("code %q: sentence %q", c, c.Sentence())
		}
		seen[string(c)] = true
	}
	// table_broken is not a reason a dataset is missing: it has its
	// sentence (for the bucket's README), and is not in Codes.
	if seen[string(CodeTableBroken)] || !strings.HasSuffix(CodeTableBroken.Sentence(), ".") || CodeTableBroken.IsCause() {
		t.Errorf("table_broken: in Codes %v, sentence %q", seen[string(CodeTableBroken)], CodeTableBroken.Sentence())
	}
	if len(seen)+1 != len(sentences) {
		t.Errorf("Codes lists %d codes (and table_broken), %d have sentences", len(seen), len(sentences))
	}
	for _, tc := range []struct {
		lastError string
		want      Code
	}{
		{CauseText(CodeSchemaMismatch, errors.New("dataset events: row 2: ...")), CodeSchemaMismatch},
		{"destination_denied: put s3://b/k: AccessDenied", CodeDestinationDenied},
		{"timed_out: context deadline exceeded", CodeTimedOut},
		{"running: not a cause", CodeInternal},
		{"claim lease expired at 2026-03-10T10:00:00Z on attempt 6 of 6", CodeTimedOut},
		{"write data: boom", CodeInternal},
		{"", CodeInternal},
	} {
		if got := CauseOf(tc.lastError); got != tc.want {
			t.Errorf("CauseOf(%q) = %s, want %s", tc.lastError, got, tc.want)
		}
	}
}

// TestDeliveryLatestOnly: a snapshot dataset without a row that the caller
// marks latest-only is listed in datasets_latest_only and does not make the
// day partial; the mark means nothing for a dataset that is not a snapshot
// or has a row (which says where it stands).
func TestDeliveryLatestOnly(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	events := mustDS(t, "events")
	members := *events
	members.Name, members.Partition, members.PartitionColumn, members.Mode, members.Read = "members", dataset.PartitionSnapshot, "", dataset.ModeFullRefresh, dataset.ReadLatestSnapshot
	done := PartitionStatus{Name: "events", Dataset: events, Exists: true, State: "completed", Generation: 1}
	d := NewDelivery("acct_x", "2026-03-05", []PartitionStatus{done, {Name: "members", Dataset: &members, LatestOnly: true}}, now)
	if !d.Complete || len(d.DatasetsMissing) != 0 || !reflect.DeepEqual(d.DatasetsLatestOnly, []LatestOnlyDataset{{Name: "members", Reason: LatestOnlyReason}}) {
		t.Errorf("older day: %+v", d)
	}
	for _, st := range []PartitionStatus{
		{Name: "members", Dataset: &members},                                                  // the newest closed day: not taken yet
		{Name: "members", Dataset: &members, Exists: true, State: "failed", LatestOnly: true}, // a row says where it stands
		{Name: "events", Dataset: events, LatestOnly: true},                                   // not a snapshot
	} {
		d := NewDelivery("acct_x", "2026-03-05", []PartitionStatus{done, st}, now)
		if d.Complete || len(d.DatasetsMissing) != 1 || len(d.DatasetsLatestOnly) != 0 {
			t.Errorf("%+v: %+v", st, d)
		}
	}
	b, err := NewDelivery("acct_x", "2026-03-05", []PartitionStatus{done}, now).Encode()
	if err != nil || strings.Contains(string(b), "datasets_latest_only") {
		t.Errorf("a day without latest-only datasets: %s %v", b, err)
	}
}
