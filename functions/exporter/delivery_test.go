package main

import (
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
)

func missingByName(d *manifest.Delivery) map[string]manifest.MissingDataset {
	out := map[string]manifest.MissingDataset{}
	for _, m := range d.DatasetsMissing {
		out[m.Name] = m
	}
	return out
}

func deliveredNames(d *manifest.Delivery) []string {
	var out []string
	for _, x := range d.DatasetsDelivered {
		out = append(out, x.Name)
	}
	return out
}

// TestDeliveryManifest follows the per-account, per-day delivery manifest
// (F4) through a day of three datasets: one exported, one failing, one not
// materialized; then all three committed.
func TestDeliveryManifest(t *testing.T) {
	all := []string{"events", "profiles", "daily_stats"}
	e := newEnv(t, envOpts{datasets: all})
	for _, ds := range all {
		e.insert(ds, genRows(ds, testDay, 5)...)
	}
	if _, err := e.led.Schedule().Materialize(e.ctx, e.acct.ID, "profiles", testDay, testDay); err != nil {
		t.Fatal(err)
	}

	t.Run("one of three exported", func(t *testing.T) {
		e.export("events", testDay)
		d := e.delivery(testDay)
		if d.Complete || d.AccountID != e.acct.ID || d.Day != testDay.String() || d.FormatVersion != 1 || !d.UpdatedAt.Equal(e.clk.Now()) {
			t.Errorf("delivery %+v", d)
		}
		if got := deliveredNames(d); strings.Join(got, ",") != "events" {
			t.Fatalf("delivered %v", got)
		}
		m := e.committed("events", testDay)
		ds := mustDataset(t, "events")
		want := manifest.DeliveredDataset{Name: "events", Contract: "v1", SchemaVersion: ds.Version, Generation: 1, Mode: ds.Mode,
			Read: ds.Read, Rows: 5, Files: 1, Manifest: layout.ManifestKey(e.prefix, "events", testDay),
			CommittedAt: e.row("events", testDay).CompletedAt}
		if got := d.DatasetsDelivered[0]; got != want || got.Rows != m.Totals.Rows {
			t.Errorf("delivered\n got %+v\nwant %+v", got, want)
		}
		miss := missingByName(d)
		if len(miss) != 2 || miss["profiles"].Code != manifest.CodeNotExportedYet || miss["profiles"].State != "pending" ||
			miss["daily_stats"].Code != manifest.CodeNotExportedYet || miss["daily_stats"].State != "" {
			t.Errorf("missing %+v", d.DatasetsMissing)
		}
	})

	t.Run("a failure is explained", func(t *testing.T) {
		// The run fails once its data is written, listing the partition
		// for stale objects.
		pp := e.partPrefix("daily_stats", testDay)
		e.failOnce(func(c buckettest.Call) bool { return c.Op == buckettest.OpList && c.Key == pp })
		defer e.faults.Set(nil, nil)
		c := e.claim("daily_stats", testDay, "")
		if err := e.process(jobBody(t, c)); err != nil {
			t.Fatal(err)
		}
		d := e.delivery(testDay)
		miss := missingByName(d)
		if d.Complete || miss["daily_stats"].State != "failed" || miss["daily_stats"].Code != manifest.CodeInternal ||
			miss["daily_stats"].Reason != manifest.CodeInternal.Sentence()+" Attempt 1 failed; it will be retried automatically." {
			t.Errorf("delivery after a failure: %+v", d)
		}
	})

	t.Run("all three committed", func(t *testing.T) {
		e.export("profiles", testDay)
		if d := e.delivery(testDay); d.Complete {
			t.Fatalf("complete while daily_stats is failed: %+v", d)
		}
		e.retry("daily_stats", testDay)
		d := e.delivery(testDay)
		if !d.Complete || len(d.DatasetsMissing) != 0 || strings.Join(deliveredNames(d), ",") != "events,profiles,daily_stats" {
			t.Fatalf("delivery %+v", d)
		}
		for _, x := range d.DatasetsDelivered {
			r := e.row(x.Name, testDay)
			ds := mustDataset(t, x.Name)
			if x.Generation != r.Generation || x.Rows != 5 || x.Files != 1 || x.Manifest != r.ManifestKey || x.Reseed ||
				!x.CommittedAt.Equal(r.CompletedAt) || x.SchemaVersion != ds.Version || x.Mode != ds.Mode || x.Read != ds.Read {
				t.Errorf("%s: %+v, ledger %+v", x.Name, x, r)
			}
		}
	})

	t.Run("a running re-export makes the day incomplete", func(t *testing.T) {
		// The events re-export is running when the profiles re-export completes.
		c, err := e.led.Partitions().ClaimManual(e.ctx, e.key("events", testDay), ledger.ManualRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "profiles", Day: testDay.String()})); err != nil {
			t.Fatal(err)
		}
		miss := missingByName(e.delivery(testDay))
		if miss["events"].Code != manifest.CodeRunning {
			t.Errorf("missing %+v", miss)
		}
		if _, err := e.led.Partitions().Complete(e.ctx, e.key("events", testDay), c.Token, ledger.Result{Rows: 5, Files: 1,
			ManifestKey: layout.ManifestKey(e.prefix, "events", testDay)}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestDeliveryManifestRace: another exporter of the same day commits its
// dataset between this exporter's read of the ledger and its PutObject, and
// never writes the manifest after (it crashed, or its write landed first).
// The re-read after the PutObject sees the change and rewrites, so the
// object ends up saying what the ledger says.
func TestDeliveryManifestRace(t *testing.T) {
	e := newEnv(t, envOpts{datasets: []string{"events", "profiles"}})
	e.insert("events", genRows("events", testDay, 3)...)
	deliveryKey := layout.DeliveryManifestKey(e.prefix, testDay)
	other := e.claim("profiles", testDay, "")
	e.faults.Set(func(c buckettest.Call) error {
		if c.Op == buckettest.OpPut && c.Key == deliveryKey && c.N == 1 {
			// The other exporter's commit lands now.
			if _, err := e.led.Partitions().Complete(e.ctx, other.Key, other.Token, ledger.Result{Rows: 7, Files: 1,
				ManifestKey: layout.ManifestKey(e.prefix, "profiles", testDay)}); err != nil {
				t.Error(err)
			}
		}
		return nil
	}, nil)
	e.export("events", testDay)
	if n := e.faults.Calls(buckettest.OpPut, deliveryKey); n != 2 {
		t.Errorf("delivery manifest written %d times, want 2 (written, re-read, rewritten)", n)
	}
	d := e.delivery(testDay)
	if !d.Complete || strings.Join(deliveredNames(d), ",") != "events,profiles" {
		t.Errorf("delivery after the race: %+v", d)
	}
}
