package pgcatalog_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/pgcatalog"
)

// invoicesEntry is catalog init's entry for the platform's invoices table.
func invoicesEntry(t *testing.T, db pgcatalog.Querier) dataset.Dataset {
	t.Helper()
	tab, err := pgcatalog.ReadTable(context.Background(), db, "invoices")
	if err != nil {
		t.Fatal(err)
	}
	d, err := pgcatalog.Entry(tab, pgcatalog.EntryOptions{TenantColumn: "org_id", PartitionColumn: "created_at",
		Partition: dataset.PartitionEventTime, SourceTimeZone: "Europe/Berlin"})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestReadTable(t *testing.T) {
	db := pgDB(t, false)
	tab, err := pgcatalog.ReadTable(context.Background(), db, "invoices")
	if err != nil {
		t.Fatal(err)
	}
	if tab.Comment != "Invoices issued by an organisation." || tab.Kind != "r" {
		t.Errorf("table comment %q kind %q", tab.Comment, tab.Kind)
	}
	want := []struct {
		name, display string
		notNull       bool
		comment       string
	}{
		{"org_id", "text", true, ""},
		{"invoice_id", "uuid", true, "Invoice identifier."},
		{"created_at", "timestamp without time zone", true, "When the invoice was issued."},
		{"amount", "numeric(20,10)", true, "Invoice total, exact."},
		{"currency", "character(3)", true, "ISO 4217 currency code."},
		{"tier", "plan_tier", true, ""},
		{"client_ip", "inet", false, "Address the invoice was created from."},
		{"network", "cidr", false, ""},
		{"labels", "text[]", false, "Free-form labels."},
		{"line_count", "integer", true, ""},
		{"quantity", "smallint", false, ""},
		{"weight", "real", false, ""},
		{"paid", "boolean", true, ""},
		{"due_on", "date", false, ""},
		{"note", "character varying(200)", false, ""},
		{"paid_at", "timestamp with time zone", false, ""},
		{"attributes", "jsonb", false, "Custom fields of the organisation."},
	}
	if len(tab.Columns) != len(want) {
		t.Fatalf("%d columns, want %d: %+v", len(tab.Columns), len(want), tab.Columns)
	}
	for i, w := range want {
		c := tab.Columns[i]
		if c.Name != w.name || c.Type.Display != w.display || c.NotNull != w.notNull || c.Comment != w.comment {
			t.Errorf("column %d = %s %s notnull=%v %q, want %+v", i, c.Name, c.Type.Display, c.NotNull, c.Comment, w)
		}
	}
	tier, _ := tab.Column("tier")
	if strings.Join(tier.EnumLabels, ",") != "free,team,enterprise" {
		t.Errorf("enum labels %q", tier.EnumLabels)
	}
	labels, _ := tab.Column("labels")
	if labels.Type.Elem == nil || labels.Type.Elem.Name != "text" {
		t.Errorf("labels element %+v", labels.Type.Elem)
	}
	if _, err := pgcatalog.ReadTable(context.Background(), db, "no_such_table"); !errors.Is(err, pgcatalog.ErrNoRelation) {
		t.Errorf("ReadTable(no_such_table) = %v, want ErrNoRelation", err)
	}
}

func TestEntry(t *testing.T) {
	db := pgDB(t, false)
	d := invoicesEntry(t, db)
	var got []string
	for _, c := range d.Columns {
		s := c.Name + " " + c.Type.String()
		if c.Nullable {
			s += " null"
		}
		if c.SourceTimeZone != "" {
			s += " in " + c.SourceTimeZone
		}
		if c.Dictionary == dataset.DictionaryOn {
			s += " dict"
		}
		got = append(got, s)
	}
	want := []string{
		"invoice_id string", "created_at timestamp in Europe/Berlin", "amount decimal(20,10)", "currency string",
		"tier string dict", "client_ip string null", "network string null", "labels json null", "line_count int64",
		"quantity int64 null", "weight double null", "paid boolean", "due_on date null", "note string null",
		"paid_at timestamp null", "attributes json null",
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("columns\n got %s\nwant %s", strings.Join(got, "; "), strings.Join(want, "; "))
	}
	tier, _ := d.Column("tier")
	if tier.Description != "One of: free, team, enterprise." {
		t.Errorf("enum description %q", tier.Description)
	}
	if q := d.Queries[dataset.DialectPostgres]; !strings.Contains(q, `"created_at" >= ($2::timestamptz AT TIME ZONE 'Europe/Berlin')`) || !strings.Contains(q, `WHERE "org_id" = $1`) {
		t.Errorf("postgres query %s", q)
	}

	tab, err := pgcatalog.ReadTable(context.Background(), db, "invoices")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		o    pgcatalog.EntryOptions
		want string
	}{
		{"no zone", pgcatalog.EntryOptions{TenantColumn: "org_id", PartitionColumn: "created_at", Partition: dataset.PartitionEventTime},
			"column created_at: timestamp without time zone holds wall-clock times without a zone"},
		{"no tenant", pgcatalog.EntryOptions{TenantColumn: "tenant_id", PartitionColumn: "created_at", Partition: dataset.PartitionEventTime, SourceTimeZone: "UTC"},
			`tenant column "tenant_id": relation invoices has no such column`},
		{"partition not a timestamp", pgcatalog.EntryOptions{TenantColumn: "org_id", PartitionColumn: "due_on", Partition: dataset.PartitionEventTime, SourceTimeZone: "UTC"},
			"partition_column due_on must be a required timestamp"},
	} {
		if _, err := pgcatalog.Entry(tab, tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Entry error %v, want %q", tc.name, err, tc.want)
		}
	}

	pgExec(t, db, `CREATE TABLE odd (org_id text NOT NULL, at timestamptz NOT NULL, total numeric, span interval, neg numeric(5,-2), attributes jsonb)`)
	odd, err := pgcatalog.ReadTable(context.Background(), db, "odd")
	if err != nil {
		t.Fatal(err)
	}
	_, err = pgcatalog.Entry(odd, pgcatalog.EntryOptions{TenantColumn: "org_id", PartitionColumn: "at", Partition: dataset.PartitionEventTime})
	for _, w := range []string{"column total: numeric: numeric without a precision", "column span: interval has no catalog type", "column neg: numeric(5,-2): a negative scale (-2)"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Entry(odd) error %v, want it to contain %q", err, w)
		}
	}
}

func TestCheckDataset(t *testing.T) {
	db := pgDB(t, false)
	d := invoicesEntry(t, db)
	check := func() []pgcatalog.Finding {
		t.Helper()
		fs, err := pgcatalog.CheckDataset(context.Background(), pgConn(t, db), d)
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
	if fs := check(); pgcatalog.HasErrors(fs) {
		t.Fatalf("init's entry does not pass check: %+v", fs)
	}

	// A query that compares the wall-clock partition column with the
	// window's instants unconverted is an error.
	plain := d
	plain.Queries = map[string]string{dataset.DialectPostgres: strings.NewReplacer(
		"($2::timestamptz AT TIME ZONE 'Europe/Berlin')", "$2", "($3::timestamptz AT TIME ZONE 'Europe/Berlin')", "$3").Replace(d.Queries[dataset.DialectPostgres])}
	fs, err := pgcatalog.CheckDataset(context.Background(), pgConn(t, db), plain)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Column != "created_at" || fs[0].Check != "query" || !strings.Contains(fs[0].Message, "AT TIME ZONE 'Europe/Berlin'") {
		t.Errorf("unconverted window: %+v", fs)
	}

	// A migration that retypes a column, another that drops a NOT NULL, a
	// third that drops a column: each is an error naming the column and
	// both types.
	pgExec(t, db, `ALTER TABLE invoices ALTER COLUMN amount TYPE numeric(30,12)`)
	pgExec(t, db, `ALTER TABLE invoices ALTER COLUMN currency DROP NOT NULL`)
	pgExec(t, db, `ALTER TABLE invoices DROP COLUMN weight`)
	fs = check()
	want := map[string]pgcatalog.Finding{
		"amount":   {Severity: pgcatalog.SeverityError, Dataset: "invoices", Column: "amount", Check: "type", Declared: "decimal(20,10)", Found: "numeric(30,12)"},
		"currency": {Severity: pgcatalog.SeverityError, Dataset: "invoices", Column: "currency", Check: "nullability", Declared: "required", Found: "nullable"},
		"weight":   {Severity: pgcatalog.SeverityError, Dataset: "invoices", Check: "query"},
	}
	for _, f := range fs {
		w, ok := want[f.Column]
		if f.Check == "query" {
			w, ok = want["weight"]
			if !strings.Contains(f.Message, "does not prepare") || !strings.Contains(f.Message, "weight") {
				t.Errorf("query finding %+v does not name the missing column", f)
			}
		}
		if !ok {
			continue
		}
		if f.Severity != w.Severity || f.Dataset != w.Dataset || f.Check != w.Check || f.Declared != w.Declared || f.Found != w.Found {
			t.Errorf("finding %+v, want %+v", f, w)
		}
		delete(want, map[bool]string{true: "weight", false: f.Column}[f.Check == "query"])
	}
	for c := range want {
		t.Errorf("no finding for %s in %+v", c, fs)
	}

	d.Relation = "no_such_table"
	if fs := check(); len(fs) != 1 || fs[0].Check != "relation" || fs[0].Severity != pgcatalog.SeverityError {
		t.Errorf("missing relation: %+v", fs)
	}
}

// TestCheckPlan: a table without an index on tenant and partition column,
// large enough that the planner reads it sequentially, is an error that
// names the estimated rows; with the index it passes.
func TestCheckPlan(t *testing.T) {
	db := pgDB(t, true)
	pgExec(t, db, `CREATE TABLE hits (site text NOT NULL, at timestamptz NOT NULL, n bigint NOT NULL, attributes jsonb)`)
	pgExec(t, db, `INSERT INTO hits SELECT 's' || (i % 50), timestamptz '2026-01-01' + i * interval '1 minute', i, NULL FROM generate_series(1, 50000) i`)
	pgExec(t, db, `ANALYZE hits`)
	tab, err := pgcatalog.ReadTable(context.Background(), db, "hits")
	if err != nil {
		t.Fatal(err)
	}
	d, err := pgcatalog.Entry(tab, pgcatalog.EntryOptions{TenantColumn: "site", PartitionColumn: "at", Partition: dataset.PartitionEventTime})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := pgcatalog.CheckDataset(context.Background(), pgConn(t, db), d)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Check != "plan" || fs[0].Severity != pgcatalog.SeverityError || !strings.Contains(fs[0].Message, "sequential scan (estimated 50000 rows)") {
		t.Fatalf("findings %+v, want one sequential scan error with the estimate", fs)
	}
	pgExec(t, db, `CREATE INDEX hits_site_at ON hits (site, at)`)
	pgExec(t, db, `ANALYZE hits`)
	fs, err = pgcatalog.CheckDataset(context.Background(), pgConn(t, db), d)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 0 {
		t.Errorf("with the index: %+v", fs)
	}
	// An index on the partition column alone: the plan either scans the
	// table or reads every tenant's day through the index; either is
	// reported.
	pgExec(t, db, `DROP INDEX hits_site_at`)
	pgExec(t, db, `CREATE INDEX hits_at ON hits (at)`)
	pgExec(t, db, `ANALYZE hits`)
	fs, err = pgcatalog.CheckDataset(context.Background(), pgConn(t, db), d)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Check != "plan" || !strings.Contains(fs[0].Message, "sequential scan") && !strings.Contains(fs[0].Message, "does not bound the tenant") {
		t.Errorf("with an index on at alone: %+v", fs)
	}
	t.Logf("with an index on at alone: %s", fs[0].Message)
}

// TestShippedCatalogChecks: the shipped catalog passes catalog check
// against the shipped PostgreSQL source DDL.
func TestShippedCatalogChecks(t *testing.T) {
	db := pgDB(t, true)
	ddl, err := dataset.SourceDDL(dataset.DialectPostgres)
	if err != nil {
		t.Fatal(err)
	}
	pgExec(t, db, ddl)
	cat, err := dataset.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range cat {
		fs, err := pgcatalog.CheckDataset(context.Background(), pgConn(t, db), d)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			if f.Severity == pgcatalog.SeverityError {
				t.Errorf("%+v", f)
			} else {
				t.Logf("%+v", f)
			}
		}
	}
}

// TestDomain: a domain maps as its base type with the domain's modifier,
// in the table and in a query's result, and an array of a domain's base.
func TestDomain(t *testing.T) {
	db := pgDB(t, true)
	pgExec(t, db, `CREATE DOMAIN money2 AS numeric(12,2) CHECK (VALUE >= 0)`)
	pgExec(t, db, `CREATE DOMAIN label AS varchar(20)`)
	pgExec(t, db, `CREATE TABLE priced (price money2 NOT NULL, tag label)`)
	tab, err := pgcatalog.ReadTable(context.Background(), db, "priced")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"decimal(12,2)", "string"} {
		m, err := pgcatalog.Map(tab.Columns[i].Type)
		if err != nil || m.Type.String() != want {
			t.Errorf("column %s (%s): %v %v, want %s", tab.Columns[i].Name, tab.Columns[i].Type.Display, m.Type, err, want)
		}
	}
	res, err := pgcatalog.DescribeQuery(context.Background(), pgConn(t, db), `SELECT price, tag FROM priced`)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"decimal(12,2)", "string"} {
		m, err := pgcatalog.Map(res[i].Type)
		if err != nil || m.Type.String() != want {
			t.Errorf("result %s (%s): %v %v, want %s", res[i].Name, res[i].Type.Display, m.Type, err, want)
		}
	}
}

// TestEntryOfView: a view carries no NOT NULL; init declares its partition
// column required (the export needs it), and check accepts the entry,
// warning about the required columns it cannot confirm.
func TestEntryOfView(t *testing.T) {
	db := pgDB(t, false)
	pgExec(t, db, `CREATE VIEW paid_invoices AS SELECT org_id, invoice_id, created_at, amount, attributes FROM invoices WHERE paid`)
	tab, err := pgcatalog.ReadTable(context.Background(), db, "paid_invoices")
	if err != nil {
		t.Fatal(err)
	}
	d, err := pgcatalog.Entry(tab, pgcatalog.EntryOptions{TenantColumn: "org_id", PartitionColumn: "created_at", Partition: dataset.PartitionEventTime, SourceTimeZone: "UTC"})
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := d.Column("created_at"); c.Nullable {
		t.Error("the view's partition column is nullable")
	}
	if c, _ := d.Column("amount"); !c.Nullable {
		t.Error("the view's amount is required")
	}
	fs, err := pgcatalog.CheckDataset(context.Background(), pgConn(t, db), d)
	if err != nil {
		t.Fatal(err)
	}
	if pgcatalog.HasErrors(fs) {
		t.Errorf("check of the view's entry: %+v", fs)
	}
	warned := false
	for _, f := range fs {
		warned = warned || f.Check == "nullability" && f.Column == "created_at" && f.Severity == pgcatalog.SeverityWarning
	}
	if !warned {
		t.Errorf("no nullability warning for the view's created_at: %+v", fs)
	}
}
