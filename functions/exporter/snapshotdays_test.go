package main

import (
	"testing"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/verify"
)

// snapshotDataset is a snapshot dataset appended to the example catalog:
// a table with no day of its own, copied whole for the newest closed day.
const snapshotDataset = `
  - name: members
    version: 1
    partition: snapshot
    relation: members
    mode: full_refresh
    read: latest_snapshot
    tenant_column: org_id
    columns:
      - {name: email, type: string}
      - {name: attributes, type: json, nullable: true}
`

// TestSnapshotOlderDaysAreNotMissing: an account receives events and a
// snapshot dataset, whose copy is taken for the newest closed day only. A
// backfilled older day's delivery manifest lists the snapshot dataset as
// not delivered for that day by design (datasets_latest_only, the reason
// telling to read its newest day) and the day as complete; verify says the
// same of that partition and does not count it missing. The newest closed
// day, whose copy is still to be taken, lists it missing (not exported
// yet). On the old code every older day stayed complete: false, the
// snapshot dataset "not exported yet ... exported automatically", forever.
func TestSnapshotOlderDaysAreNotMissing(t *testing.T) {
	e := newEnv(t, envOpts{datasets: []string{"events", "members"}, catalog: func(s string) string { return s + snapshotDataset }})
	newest := e.acct.WithDefaults(0).ClosedThrough(e.clk.Now())
	if !testDay.Before(newest) {
		t.Fatalf("setup: %s is not older than the newest closed day %s", testDay, newest)
	}
	for _, day := range []civil.Date{testDay, newest} {
		e.insert("events", genRows("events", day, 3)...)
		if row := e.export("events", day); row.State != ledger.StateCompleted {
			t.Fatalf("events %s: %+v", day, row)
		}
	}

	d := e.delivery(testDay)
	if !d.Complete || len(d.DatasetsMissing) != 0 || len(d.DatasetsDelivered) != 1 || d.DatasetsDelivered[0].Name != "events" {
		t.Errorf("older day: complete %v, delivered %+v, missing %+v; want complete, events delivered, nothing missing", d.Complete, d.DatasetsDelivered, d.DatasetsMissing)
	}
	if len(d.DatasetsLatestOnly) != 1 || d.DatasetsLatestOnly[0].Name != "members" || d.DatasetsLatestOnly[0].Reason != manifest.LatestOnlyReason {
		t.Errorf("older day: datasets_latest_only %+v, want members with its reason", d.DatasetsLatestOnly)
	}

	d = e.delivery(newest)
	if d.Complete || len(d.DatasetsMissing) != 1 || d.DatasetsMissing[0].Name != "members" || d.DatasetsMissing[0].Code != manifest.CodeNotExportedYet || len(d.DatasetsLatestOnly) != 0 {
		t.Errorf("newest closed day: complete %v, missing %+v, latest only %+v; want members not exported yet", d.Complete, d.DatasetsMissing, d.DatasetsLatestOnly)
	}

	cfg, _ := deployed(t)
	target := verify.Target{Bucket: e.acct.Destination.Bucket, Prefix: e.prefix, Dataset: "members", Day: testDay}
	r, err := verify.Check(e.ctx, bucket.New(awsclient.NewS3(cfg), target.Bucket, bucket.Options{}), target, verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != verify.StatusLatestOnly {
		t.Errorf("verify of members on the older day: %s, want %s\n%+v", r.Status, verify.StatusLatestOnly, r.Findings)
	}
	target.Day = newest
	if r, err = verify.Check(e.ctx, bucket.New(awsclient.NewS3(cfg), target.Bucket, bucket.Options{}), target, verify.Options{}); err != nil || r.Status != verify.StatusNotCommitted {
		t.Errorf("verify of members on the newest closed day: %v %v, want %s", r, err, verify.StatusNotCommitted)
	}
}
