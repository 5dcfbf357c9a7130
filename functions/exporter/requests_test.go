//go:build !noduckdb

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/bucketdocs"
	"github.com/daybook-dev/daybook/shared/devkit/awscount"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/ledger"
)

var updateDocs = flag.Bool("update", false, "rewrite the request-count rows of docs/performance.md from the counts")

// counted builds e's exporter again as main builds it, its clients also
// counting into c: its own ledger client, the destination's S3 client
// assumed through STS with the account's role (one the exporter may assume:
// daybook-export-*), the jobs queue, and the event bus with the outbox on.
// The test's own ledger (e.led: claims, reads) is not counted.
func (e *env) counted(c *awscount.Counter) {
	e.t.Helper()
	e.acct.Destination.RoleARN = "arn:aws:iam::" + awsclient.LocalAccountID + ":role/daybook-export-writer"
	e.acct.Destination.ExternalID = "daybook-" + strings.TrimPrefix(e.acct.ID, "acct_")
	if err := e.led.Accounts().PutAccount(e.ctx, e.acct); err != nil {
		e.t.Fatal(err)
	}
	e.opts.aws = c.Config
	e.rebuild(nil)
}

// schemaRecorded records name's delivered schema as an earlier export
// would have (ledger.Schemas.RecordSchema).
func (e *env) schemaRecorded(name string) {
	e.t.Helper()
	ds, err := datasettest.Example(e.t).Get(name)
	if err != nil {
		e.t.Fatal(err)
	}
	doc, err := bucketdocs.Schema(ds)
	if err != nil {
		e.t.Fatal(err)
	}
	sum := sha256.Sum256(doc)
	if _, err := e.led.Schemas().RecordSchema(e.ctx, ledger.DeliveredSchema{Dataset: ds.Name, Contract: ds.ContractVersion(),
		Version: ds.Version, Doc: doc, SHA256: hex.EncodeToString(sum[:])}); err != nil {
		e.t.Fatal(err)
	}
}

// TestRequestCounts (issue 25 §3): the AWS requests the exporter makes,
// by service and kind, for one export, one export in slices and one
// restatement check, counted on the emulated stack, are the rows of the
// table in docs/performance.md (which the cost model prices): a count that
// changes fails naming its row, and -update rewrites the rows.
func TestRequestCounts(t *testing.T) {
	var rows []awscount.Row
	row := func(scenario string, c *awscount.Counter) {
		t.Helper()
		t.Logf("%s: %s", scenario, strings.Join(awscount.Ops(c.Counts()), ", "))
		r, err := awscount.RowOf(scenario, "exporter", c.Counts())
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}

	// One export: 3,000 events in one file, the account's role assumed,
	// on a deployment that delivered the dataset's schema before (the
	// package's tests share the ledger table: whether an earlier test
	// recorded it must not change the count).
	c := &awscount.Counter{}
	e := newEnv(t, envOpts{})
	e.schemaRecorded("events")
	e.counted(c)
	e.insert("events", genRows("events", testDay, 3000)...)
	claim := e.claim("events", testDay, "")
	c.Reset()
	if err := e.process(jobBody(t, claim)); err != nil {
		t.Fatal(err)
	}
	if r := e.row("events", testDay); r.State != ledger.StateCompleted {
		t.Fatalf("export: %+v", r)
	}
	row("one export (1 file)", c)

	// One restatement check of that day, unchanged.
	c.Reset()
	if err := e.process(checkBody(t, e.row("events", testDay))); err != nil {
		t.Fatal(err)
	}
	row("one restatement check (unchanged)", c)

	// The next day's export on the same warm function.
	next := testDay.AddDays(1)
	e.insert("events", genRows("events", next, 3000)...)
	claim = e.claim("events", next, "")
	c.Reset()
	if err := e.process(jobBody(t, claim)); err != nil {
		t.Fatal(err)
	}
	row("one export, warm (1 file)", c)

	// One export in 3 slices: the planning run and the three slices'
	// (the last commits).
	c = &awscount.Counter{}
	se, queue := slicedEnv(t, 1000)
	se.counted(c)
	se.insert("events", genRows("events", testDay, 3000)...)
	claim = se.claim("events", testDay, "")
	c.Reset()
	if err := se.process(jobBody(t, claim)); err != nil {
		t.Fatal(err)
	}
	bodies := se.receive(queue)
	for i := range 3 {
		if err := se.process(bodies[i]); err != nil {
			t.Fatal(err)
		}
	}
	if r := se.row("events", testDay); r.State != ledger.StateCompleted {
		t.Fatalf("sliced export: %+v", r)
	}
	row("one export in 3 slices (4 invocations)", c)
	awscount.CheckDoc(t, "../../docs/performance.md", rows, *updateDocs)
}
