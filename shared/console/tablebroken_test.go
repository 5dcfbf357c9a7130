package console

import (
	"net/http"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// TestAccountPageNamesABrokenTable: a day delivered while the dataset's
// Iceberg table could not take it is under "Needs attention" as
// table_broken, with the fix (the repair command) and the raw error naming
// the object at fault and the account's own repair command.
func TestAccountPageNamesABrokenTable(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seed(f)
	at := day("2026-11-16").Start(time.UTC).Add(3 * time.Hour)
	f.ledger.put(ledger.Row{Key: partition.Key{AccountID: healthy, Dataset: "events", Day: day("2026-11-15")}, State: ledger.StateCompleted, Attempts: 1,
		Generation: 1, Rows: 10, Bytes: 100, Files: 1, CompletedAt: at, UpdatedAt: at, Reason: partition.ReasonScheduled,
		TableError: "table_broken: table object daybook/" + healthy + "/v1/events/metadata/v9.metadata.json: parse table metadata v9: unexpected end of JSON input; " +
			"the day's files are delivered; repair the table: daybook table repair --account " + healthy + " --dataset events"})
	res := f.get("/accounts/" + healthy + "?from=2026-11-10&to=2026-11-20")
	if res.code != http.StatusOK {
		t.Fatalf("status %d\n%s", res.code, res.body)
	}
	wantContains(t, res.body, `<h2 id="att-title">Needs attention</h2>`, `<div class="failure-group" data-code="table_broken">`,
		"the files were delivered; the dataset&#39;s Iceberg table did not take them", "Fix: find out who changed the table&#39;s metadata",
		"v9.metadata.json", "daybook table repair --account "+healthy+" --dataset events", `/partitions/events/2026-11-15">events 2026-11-15</a>`)
}
