package manifest

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"
)

func mustDS(t *testing.T, name string) *dataset.Dataset {
	t.Helper()
	ds, err := dataset.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return &ds
}

func TestNewDelivery(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.FixedZone("X", 3600))
	done := time.Date(2026, 3, 10, 11, 0, 0, 0, time.UTC)
	events, profiles, stats := mustDS(t, "events"), mustDS(t, "profiles"), mustDS(t, "daily_stats")
	completed := PartitionStatus{Name: "events", Dataset: events, Exists: true, State: "completed", Generation: 2,
		Rows: 10, Files: 1, ManifestKey: "p/v1/events/dt=2026-03-09/_manifest.json", CompletedAt: done, Reason: "manual"}

	for _, tc := range []struct {
		name       string
		st         PartitionStatus
		wantReason string // "" means delivered
	}{
		{"completed", completed, ""},
		{"absent", PartitionStatus{Name: "profiles", Dataset: profiles}, "not materialized"},
		{"pending", PartitionStatus{Name: "profiles", Dataset: profiles, Exists: true, State: "pending"}, "not exported yet"},
		{"queued first time", PartitionStatus{Name: "profiles", Dataset: profiles, Exists: true, State: "queued"}, "not exported yet"},
		{"queued re-export", PartitionStatus{Name: "profiles", Dataset: profiles, Exists: true, State: "queued", Generation: 3},
			"queued for re-export (generation 3 was delivered before)"},
		{"running", PartitionStatus{Name: "daily_stats", Dataset: stats, Exists: true, State: "running", Generation: 1}, "running"},
		{"failed", PartitionStatus{Name: "daily_stats", Dataset: stats, Exists: true, State: "failed", Attempts: 3, LastError: "boom"},
			"failed (attempt 3): boom"},
		{"exhausted", PartitionStatus{Name: "daily_stats", Dataset: stats, Exists: true, State: "failed", Attempts: 6, Exhausted: true, LastError: "boom"},
			"stopped retrying after 6 attempts: boom"},
		{"unknown dataset", PartitionStatus{Name: "visitors", Exists: true, State: "completed"}, "unknown dataset: not in this daybook's catalog"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDelivery("acct_x", "2026-03-09", []PartitionStatus{tc.st}, now)
			if d.UpdatedAt != now.UTC() || d.AccountID != "acct_x" || d.Day != "2026-03-09" || d.Contract != "v1" || d.FormatVersion != 1 {
				t.Errorf("header %+v", d)
			}
			if tc.wantReason == "" {
				if !d.Complete || len(d.DatasetsDelivered) != 1 || len(d.DatasetsMissing) != 0 {
					t.Fatalf("want delivered: %+v", d)
				}
				want := DeliveredDataset{Name: "events", SchemaVersion: 1, Generation: 2, Mode: "incremental_append",
					Read: "union_all_partitions", Rows: 10, Files: 1, Manifest: completed.ManifestKey, CommittedAt: done}
				if got := d.DatasetsDelivered[0]; got != want {
					t.Errorf("delivered\n got %+v\nwant %+v", got, want)
				}
				return
			}
			if d.Complete || len(d.DatasetsDelivered) != 0 || len(d.DatasetsMissing) != 1 {
				t.Fatalf("want missing: %+v", d)
			}
			if m := d.DatasetsMissing[0]; m.Reason != tc.wantReason || m.Name != tc.st.Name || m.State != tc.st.State {
				t.Errorf("missing %+v, want reason %q", m, tc.wantReason)
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
