package console

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/partition"
	"github.com/daybook-dev/daybook/shared/source"
)

// The seeded accounts.
const (
	healthy  = "acct_healthy222222222"
	troubled = "acct_troubled22222222"
	disabled = "acct_disabled22222222"
)

func day(s string) civil.Date { return civil.MustParse(s) }

// seed fills the fixture's ledger and bucket:
//
//   - healthy: events and profiles completed 2026-11-01..29, generation 1;
//   - troubled: events from 2026-11-20: completed 20..24 (the 24th on its
//     second attempt, after a failure 5 h ago), stopped 25 (six failed
//     attempts, four of them in the last 24 h), failed 26 (1 h ago),
//     claimed 27, running 28, queued 29 (ledger pending); its 24th is in the bucket with a
//     manifest and the day's delivery manifest;
//   - disabled: no rows.
//
// The troubled account has 6 failed attempts in the last 24 h.
func seed(f *fixture) {
	acct := func(id, name string, start string, enabled bool, ds ...string) {
		f.ledger.accounts[id] = account.Account{ID: id, Name: name, Enabled: enabled, StartDate: day(start), Datasets: ds,
			Destination: account.Destination{Bucket: "daybook-exports-test"}}
	}
	acct(healthy, "Healthy Co", "2026-11-01", true, "events", "profiles")
	acct(troubled, "Troubled Ltd", "2026-11-20", true, "events")
	acct(disabled, "Paused Inc", "2026-11-01", false, "events")

	completed := func(id, ds, d string, gen int64, at time.Time) ledger.Row {
		return ledger.Row{Key: partition.Key{AccountID: id, Dataset: ds, Day: day(d)}, State: ledger.StateCompleted, Attempts: 1,
			Generation: gen, Rows: 1234, Bytes: 56789, Files: 1, CompletedAt: at, UpdatedAt: at, Reason: partition.ReasonScheduled}
	}
	for _, ds := range []string{"events", "profiles"} {
		for _, d := range civil.Range(day("2026-11-01"), day("2026-11-29")) {
			at := d.AddDays(1).Start(time.UTC).Add(150 * time.Minute)
			f.ledger.put(completed(healthy, ds, d.String(), 1, at))
		}
	}
	for _, d := range civil.Range(day("2026-11-20"), day("2026-11-23")) {
		f.ledger.put(completed(troubled, "events", d.String(), 1, d.AddDays(1).Start(time.UTC).Add(3*time.Hour)))
	}
	key := func(d string) partition.Key {
		return partition.Key{AccountID: troubled, Dataset: "events", Day: day(d)}
	}
	ago := func(d time.Duration) time.Time { return testNow.Add(-d) }

	r24 := completed(troubled, "events", "2026-11-24", 2, ago(3*time.Hour))
	r24.Attempts, r24.Reason, r24.ManifestKey = 2, partition.ReasonRetry, "daybook/"+troubled+"/v1/events/dt=2026-11-24/_manifest.json"
	f.ledger.put(r24,
		ledger.Attempt{Key: key("2026-11-24"), Attempt: 1, Outcome: ledger.OutcomeFailed, Reason: partition.ReasonScheduled,
			StartedAt: ago(5*time.Hour + time.Minute), FinishedAt: ago(5 * time.Hour), Error: "source timeout"},
		ledger.Attempt{Key: key("2026-11-24"), Attempt: 2, Outcome: ledger.OutcomeCompleted, Reason: partition.ReasonRetry,
			StartedAt: ago(3*time.Hour + 42*time.Second), FinishedAt: ago(3 * time.Hour), Generation: 2, Rows: 1234, Bytes: 56789, Files: 1, DurationMS: 42000})

	var hist []ledger.Attempt
	for i, h := range []time.Duration{40, 30, 20, 10, 5, 2} {
		out := ledger.OutcomeFailed
		if i == 5 {
			out = ledger.OutcomeStopped
		}
		hist = append(hist, ledger.Attempt{Key: key("2026-11-25"), Attempt: i + 1, Outcome: out, Reason: partition.ReasonRetry,
			StartedAt: ago(h*time.Hour + time.Minute), FinishedAt: ago(h * time.Hour), Error: "source unreachable"})
	}
	f.ledger.put(ledger.Row{Key: key("2026-11-25"), State: ledger.StateFailed, Stopped: true, Attempts: 6, LastError: "source unreachable",
		DueKey: "9#2026-11-25#events", Reason: partition.ReasonRetry, UpdatedAt: ago(2 * time.Hour)}, hist...)
	f.ledger.put(ledger.Row{Key: key("2026-11-26"), State: ledger.StateFailed, Attempts: 1, LastError: "permission denied on s3:PutObject",
		NextAttemptAt: testNow.Add(time.Hour), Reason: partition.ReasonScheduled, UpdatedAt: ago(time.Hour)},
		ledger.Attempt{Key: key("2026-11-26"), Attempt: 1, Outcome: ledger.OutcomeFailed, StartedAt: ago(61 * time.Minute), FinishedAt: ago(time.Hour),
			Error: "permission denied on s3:PutObject"})
	f.ledger.put(ledger.Row{Key: key("2026-11-27"), State: ledger.StateRunning, ClaimedAt: ago(5 * time.Minute), LeaseUntil: testNow.Add(15 * time.Minute),
		Reason: partition.ReasonScheduled, UpdatedAt: ago(5 * time.Minute)})
	f.ledger.put(ledger.Row{Key: key("2026-11-28"), State: ledger.StateRunning, Attempts: 1, ClaimedAt: ago(5 * time.Minute), StartedAt: ago(4 * time.Minute),
		LeaseUntil: testNow.Add(15 * time.Minute), Reason: partition.ReasonScheduled, UpdatedAt: ago(4 * time.Minute)})
	f.ledger.put(ledger.Row{Key: key("2026-11-29"), State: ledger.StatePending, Reason: partition.ReasonScheduled, UpdatedAt: ago(9 * time.Hour)})

	prefix := "daybook/" + troubled
	m := &manifest.Manifest{FormatVersion: manifest.FormatVersion, Contract: layout.Version, AccountID: troubled, Dataset: "events", SchemaVersion: 1,
		Day: "2026-11-24", Generation: 2, RunID: "run-24-2", Reason: "retry", Attempt: 2, Format: "parquet", Compression: "snappy",
		Files:      []manifest.File{{Key: layout.DataKey(prefix, "events", day("2026-11-24"), 0, ".parquet"), Rows: 1234, Bytes: 56789, CRC32C: "q1w2e3==", SHA256: "ab"}},
		Provenance: manifest.Provenance{Provenance: source.Provenance{Source: "postgres", Relation: "events", RowCount: 1234}}}
	m.Sum()
	mb, err := m.Encode()
	if err != nil {
		panic(err)
	}
	mkey := layout.ManifestKey(prefix, "events", day("2026-11-24"))
	f.bucket.objects[mkey] = mb
	f.bucket.objects[layout.SuccessKey(prefix, "events", day("2026-11-24"))] = manifest.NewSuccess(2, "run-24-2", mkey, mb, ago(3*time.Hour)).Encode()
	dm := manifest.Delivery{FormatVersion: manifest.DeliveryFormatVersion, Contract: layout.Version, AccountID: troubled, Day: "2026-11-24", Complete: true,
		DatasetsDelivered: []manifest.DeliveredDataset{{Name: "events", SchemaVersion: 1, Generation: 2, Mode: "incremental_append", Read: "union_all_partitions",
			Rows: 1234, Files: 1, Manifest: mkey, CommittedAt: ago(3 * time.Hour)}},
		DatasetsMissing: []manifest.MissingDataset{}, UpdatedAt: ago(3 * time.Hour)}
	db, err := json.Marshal(dm)
	if err != nil {
		panic(err)
	}
	f.bucket.objects[layout.DeliveryManifestKey(prefix, day("2026-11-24"))] = db
}

var errDenied = fmt.Errorf("get daybook/x/_SUCCESS: %w: AccessDenied (RequestID: 7Q3Z)", bucket.ErrAccessDenied)
