package main

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/bucketdocs"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/dataset/example"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// useCatalog makes the example catalog with edit applied the env's
// catalog (useCatalogDoc). The package's tests share one deployment, whose
// ledger records the schema delivered of each dataset (pk=SCHEMAS), which
// the exporter checks every catalog against: so when the test ends, the
// records are put back as they were, and a test that delivered another
// catalog leaves the next test the deployment it found.
func (e *env) useCatalog(edit func(string) string) {
	e.t.Helper()
	keepSchemaRecords(e.t)
	e.useCatalogDoc([]byte(edit(string(example.YAML()))))
}

// useCatalogDoc makes doc the catalog of the env's deployment: the
// exporter's, as one built with DAYBOOK_CATALOG naming it (a rebuild reads
// the file), and the test's ledger's. It returns the catalog.
func (e *env) useCatalogDoc(doc []byte) *dataset.Set {
	e.t.Helper()
	path, cat := catalogFile(e.t, doc)
	e.opts.env = maps.Clone(e.opts.env)
	if e.opts.env == nil {
		e.opts.env = map[string]string{}
	}
	e.opts.env[dataset.EnvCatalog] = path
	e.svc.Catalog, e.exp.Catalog = cat, cat
	lc := e.led.Config()
	lc.Catalog = cat
	cfg, _ := deployed(e.t)
	led, err := ledger.New(dynamoClient(cfg), lc)
	if err != nil {
		e.t.Fatal(err)
	}
	e.led = led
	return cat
}

// catalogFile writes doc to a catalog file of the test's own, as a
// deployment's DAYBOOK_CATALOG names one, and returns its path and the
// catalog.
func catalogFile(t *testing.T, doc []byte) (string, *dataset.Set) {
	t.Helper()
	cat := datasettest.Catalog(t, doc)
	path := filepath.Join(t.TempDir(), "catalog.yaml")
	if err := os.WriteFile(path, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, cat
}

// keepSchemaRecords puts the ledger's delivered-schema items back as they
// are now when t ends.
func keepSchemaRecords(t *testing.T) {
	t.Helper()
	cfg, out := deployed(t)
	db, table := dynamoClient(cfg), out["LedgerTableName"]
	items := func() []map[string]types.AttributeValue {
		t.Helper()
		res, err := db.Query(context.Background(), &dynamodb.QueryInput{TableName: &table, ConsistentRead: aws.Bool(true),
			KeyConditionExpression:    aws.String("pk = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "SCHEMAS"}}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Items
	}
	before := items()
	t.Cleanup(func() {
		for _, it := range items() {
			if _, err := db.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: &table,
				Key: map[string]types.AttributeValue{"pk": it["pk"], "sk": it["sk"]}}); err != nil {
				t.Error(err)
			}
		}
		for _, it := range before {
			if _, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &table, Item: it}); err != nil {
				t.Error(err)
			}
		}
	})
}

// TestExporterRefusesABrokenContract: after a day was delivered, a catalog
// that drops a delivered column fails the next export before it touches the
// partition (schema_mismatch, the column named in the ledger); one that
// appends a nullable column with a version bump exports, and its schema
// document moves on to the new version.
func TestExporterRefusesABrokenContract(t *testing.T) {
	e := newEnv(t, envOpts{datasets: []string{"events"}})
	for d := range 3 {
		e.insert("events", genRows("events", testDay.AddDays(-d), 3)...)
	}
	if row := e.export("events", testDay); row.State != ledger.StateCompleted {
		t.Fatalf("first export: %+v", row)
	}

	e.useCatalog(func(s string) string {
		return strings.Replace(s, "      - {name: user_id, type: \"string\", nullable: true, description: \"Identified user, if any.\"}\n", "", 1)
	})
	row := e.export("events", testDay.AddDays(-1))
	if row.State != ledger.StateFailed {
		t.Fatalf("export with a dropped column: %+v", row)
	}
	contains(t, "ledger error", row.LastError, "schema_mismatch: ", `column "user_id" removed`, "_schemas/events.json")
	if objs := e.list(layout.PartitionPrefix(e.prefix, "events", testDay.AddDays(-1))); len(objs) != 0 {
		t.Errorf("the refused run wrote into its partition: %v", objs)
	}
	if d := e.delivery(testDay.AddDays(-1)); len(d.DatasetsMissing) != 1 || d.DatasetsMissing[0].Cause != manifest.CodeSchemaMismatch {
		t.Errorf("delivery manifest: %+v", d.DatasetsMissing)
	}

	e.useCatalog(func(s string) string {
		s = strings.Replace(s, "  - name: events\n    version: 1\n", "  - name: events\n    version: 2\n", 1)
		return strings.Replace(s, "Per-tenant custom fields as a JSON object.\"}\n", "Per-tenant custom fields as a JSON object.\"}\n      - {name: note, type: \"string\", nullable: true, since: 2}\n", 1)
	})
	if _, err := e.db.ExecContext(e.ctx, `ALTER TABLE events ADD COLUMN note TEXT`); err != nil {
		t.Fatal(err)
	}
	if row := e.export("events", testDay.AddDays(-2)); row.State != ledger.StateCompleted {
		t.Fatalf("export with an appended column: %+v", row)
	}
	if m := e.committed("events", testDay.AddDays(-2)); m.SchemaVersion != 2 {
		t.Errorf("manifest schema version %d, want 2", m.SchemaVersion)
	}
	if doc := string(e.get(layout.SchemaKey(e.prefix, "events"))); !strings.Contains(doc, `"schema_version": 2`) {
		t.Errorf("schema document not moved to version 2:\n%s", doc)
	}
}

// eventsDelivered is an env of events and profiles, three days of rows
// each, whose first export (events, testDay) wrote the account's bucket
// documents: a _schemas document for each dataset.
func eventsDelivered(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, envOpts{datasets: []string{"events", "profiles"}})
	for d := range 3 {
		e.insert("events", genRows("events", testDay.AddDays(-d), 3)...)
		e.insert("profiles", genRows("profiles", testDay.AddDays(-d), 3)...)
	}
	if row := e.export("events", testDay); row.State != ledger.StateCompleted {
		t.Fatalf("first export: %+v", row)
	}
	return e
}

// TestNeverDeliveredDatasetMayChange: the bucket's _schemas document binds
// a dataset only once a generation of it was committed for the account.
// The account's first commit (of events) writes a document for every
// dataset it receives, profiles too; retyping profiles before its first
// day is delivered is accepted (no customer received the old type; on the
// old code it failed as schema_mismatch against that document), and the
// commit rewrites the document. Retyping it again after that day is
// refused as schema_mismatch, naming the column. Whether anything was
// committed is the ledger's word: with events committed, deleting every
// events object from the bucket (the document included) does not let a
// retype of events through, and a document planted to agree with a retype
// does not either: the ledger's record of the delivered schema stands.
func TestNeverDeliveredDatasetMayChange(t *testing.T) {
	e := eventsDelivered(t)
	profilesDoc := layout.SchemaKey(e.prefix, "profiles")
	if doc := string(e.get(profilesDoc)); !strings.Contains(doc, `"type": "int64"`) {
		t.Fatalf("the first commit wrote no profiles document with event_count int64:\n%s", doc)
	}

	retype := func(column, from, to string) func(string) string {
		return func(s string) string {
			old := "{name: " + column + ", type: \"" + from + "\""
			if !strings.Contains(s, old) {
				t.Fatalf("catalog lacks %s", old)
			}
			return strings.Replace(s, old, "{name: "+column+", type: \""+to+"\"", 1)
		}
	}
	e.useCatalog(retype("event_count", "int64", "double"))
	row := e.export("profiles", testDay)
	if row.State != ledger.StateCompleted || row.Generation != 1 {
		t.Fatalf("a retype of a dataset never delivered to the account: %+v", row)
	}
	if doc := string(e.get(profilesDoc)); !strings.Contains(doc, `"name": "event_count"`) || strings.Contains(doc, `"type": "int64"`) {
		t.Errorf("the commit did not rewrite the profiles document:\n%s", doc)
	}

	e.useCatalog(retype("event_count", "int64", "int64")) // back to int64: the delivered double is the contract now
	row = e.export("profiles", testDay.AddDays(-1))
	if row.State != ledger.StateFailed {
		t.Fatalf("a retype after the first delivery: %+v", row)
	}
	contains(t, "ledger error", row.LastError, "schema_mismatch: ", "event_count", "_schemas/profiles.json")
	// A document planted to say what the catalog says now does not lift
	// the refusal: the ledger's record of what was delivered stands.
	planted, err := bucketdocs.Schema(mustDataset(t, "profiles"))
	if err != nil {
		t.Fatal(err)
	}
	e.putObject(profilesDoc, planted)
	e.clk.Set(row.NextAttemptAt)
	row = e.retry("profiles", testDay.AddDays(-1))
	if row.State != ledger.StateFailed {
		t.Fatalf("a retype after the first delivery, under a planted document that agrees with it: %+v", row)
	}
	contains(t, "ledger error", row.LastError, "schema_mismatch: ", "event_count", "the schema this deployment delivered of profiles")

	// events was committed: the bucket losing every events object does not
	// make a retype acceptable.
	for key := range e.list(layout.ContractPrefix(e.prefix)) {
		if strings.Contains(key, "/events/") || strings.HasSuffix(key, "/_schemas/events.json") {
			if _, err := e.s3.DeleteObject(e.ctx, &s3.DeleteObjectInput{Bucket: &e.acct.Destination.Bucket, Key: &key}); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.useCatalog(retype("value", "double", "int64"))
	row = e.export("events", testDay.AddDays(-1))
	if row.State != ledger.StateFailed {
		t.Fatalf("a retype of a committed dataset whose objects were deleted from the bucket: %+v", row)
	}
	// Refused by the check before the generation began (on the old code it
	// began, and only a value that was no integer stopped it).
	contains(t, "ledger error", row.LastError, "schema_mismatch: ", "the schema this deployment delivered of events", `"value"`)
}

// TestUnreadableSchemaDocument: a _schemas document that is not daybook's
// (not one that reads, or larger than the read allows) binds nothing and
// never holds a dataset back: a dataset never delivered exports, and its
// commit puts the document back. One delivered stays bound by the
// ledger's record: a retype is still refused under an unreadable
// document.
func TestUnreadableSchemaDocument(t *testing.T) {
	e := eventsDelivered(t)
	profilesDoc, eventsDoc := layout.SchemaKey(e.prefix, "profiles"), layout.SchemaKey(e.prefix, "events")
	for i, body := range [][]byte{
		[]byte("{}"),
		[]byte("not json"),
		bytes.Repeat([]byte(" "), bucketdocs.MaxSchemaBytes+1),
	} {
		e.putObject(profilesDoc, body)
		day := testDay.AddDays(-i)
		if row := e.export("profiles", day); row.State != ledger.StateCompleted {
			t.Fatalf("profiles under a document of %d bytes that does not read: %+v", len(body), row)
		}
		if doc := e.get(profilesDoc); !bytes.Contains(doc, []byte(`"name": "event_count"`)) {
			t.Errorf("the commit did not put the profiles document back (planted %d bytes): %.200s", len(body), doc)
		}
	}

	// events was delivered: its record binds under an unreadable document.
	e.putObject(eventsDoc, []byte("{}"))
	e.useCatalog(func(s string) string {
		return strings.Replace(s, `{name: value, type: "double"`, `{name: value, type: "int64"`, 1)
	})
	row := e.export("events", testDay.AddDays(-1))
	if row.State != ledger.StateFailed {
		t.Fatalf("a retype of a delivered dataset under an unreadable document: %+v", row)
	}
	contains(t, "ledger error", row.LastError, "schema_mismatch: ", "the schema this deployment delivered of events", `"value"`)
}
