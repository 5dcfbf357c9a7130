package pgcatalog_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

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
	return entry(t, tab, pgcatalog.EntryOptions{TenantColumn: "org_id", PartitionColumn: "created_at",
		Partition: dataset.PartitionEventTime, SourceTimeZone: "Europe/Berlin"})
}

// entry is catalog init's entry for tab, resolved as the catalog loader
// resolves it (queries generated).
func entry(t *testing.T, tab pgcatalog.Table, o pgcatalog.EntryOptions) dataset.Dataset {
	t.Helper()
	d, err := pgcatalog.Entry(tab, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Queries) > 0 || len(d.Fingerprint) > 0 {
		t.Errorf("the entry of %s holds queries: %v %v", tab.Relation, d.Queries, d.Fingerprint)
	}
	r, err := dataset.ResolveEntry(d)
	if err != nil {
		t.Fatal(err)
	}
	return r
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
	if d.TenantColumn != "org_id" || d.TenantType != dataset.TenantString || strings.Join(d.OrderBy, ",") != "created_at,invoice_id" || d.ChangedColumn != "" {
		t.Errorf("tenant %s (%s), order_by %v, changed_column %q", d.TenantColumn, d.TenantType, d.OrderBy, d.ChangedColumn)
	}
	if q := d.Queries[dataset.DialectPostgres]; !strings.Contains(q, `created_at >= ($2::timestamptz AT TIME ZONE 'Europe/Berlin')`) || !strings.Contains(q, `WHERE org_id = $1`) {
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

// TestCheckIndexes: the index check of a generated query reads the
// indexes from the database's catalog, not from a plan: a table of a few
// rows whose primary key begins with the tenant passes as a snapshot (the
// planner would scan it), an event table needs (tenant, partition
// column), and a large table without any is an error naming the
// estimated rows. A partitioned table's leaf partitions are each checked.
func TestCheckIndexes(t *testing.T) {
	db := pgDB(t, true)
	check := func(table string, o pgcatalog.EntryOptions) []pgcatalog.Finding {
		t.Helper()
		tab, err := pgcatalog.ReadTable(context.Background(), db, table)
		if err != nil {
			t.Fatal(err)
		}
		fs, err := pgcatalog.CheckDataset(context.Background(), pgConn(t, db), entry(t, tab, o))
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
	snapshot := pgcatalog.EntryOptions{TenantColumn: "org_id", Partition: dataset.PartitionSnapshot}
	events := pgcatalog.EntryOptions{TenantColumn: "site", PartitionColumn: "at", Partition: dataset.PartitionEventTime}

	pgExec(t, db, `CREATE TABLE members (org_id text NOT NULL, member_id uuid NOT NULL, role text NOT NULL, PRIMARY KEY (org_id, member_id))`)
	pgExec(t, db, `INSERT INTO members SELECT 'org-' || (i % 2), gen_random_uuid(), 'member' FROM generate_series(1, 6) i`)
	pgExec(t, db, `ANALYZE members`)
	if fs := check("members", snapshot); len(fs) != 0 {
		t.Errorf("a snapshot whose primary key begins with the tenant: %+v", fs)
	}

	pgExec(t, db, `CREATE TABLE hits (site text NOT NULL, id bigint NOT NULL, at timestamptz NOT NULL, n bigint NOT NULL, PRIMARY KEY (site, id))`)
	pgExec(t, db, `INSERT INTO hits SELECT 's' || (i % 50), i, timestamptz '2026-01-01' + i * interval '1 minute', i FROM generate_series(1, 50000) i`)
	pgExec(t, db, `ANALYZE hits`)
	one := func(fs []pgcatalog.Finding, sev pgcatalog.Severity, msg ...string) {
		t.Helper()
		if len(fs) != 1 || fs[0].Check != "index" || fs[0].Severity != sev || fs[0].Declared != "index on (site, at)" {
			t.Fatalf("findings %+v, want one %s about the index", fs, sev)
		}
		for _, m := range msg {
			if !strings.Contains(fs[0].Message, m) {
				t.Errorf("finding %q lacks %q", fs[0].Message, m)
			}
		}
	}
	one(check("hits", events), pgcatalog.SeverityWarning, "hits_pkey (primary key) on (site, id) on the tenant but not then at", "add an index on (site, at)")
	pgExec(t, db, `ALTER TABLE hits DROP CONSTRAINT hits_pkey`)
	one(check("hits", events), pgcatalog.SeverityError, "has no index beginning with the tenant column site", "estimated 50000 rows", "add an index on (site, at)")
	pgExec(t, db, `CREATE INDEX hits_at ON hits (at)`)
	one(check("hits", events), pgcatalog.SeverityWarning, "hits_at on (at), which does not begin with the tenant")
	pgExec(t, db, `CREATE INDEX hits_site_at_n ON hits (site, at) INCLUDE (n)`)
	if fs := check("hits", events); len(fs) != 0 {
		t.Errorf("with the index: %+v", fs)
	}
	// An index with a predicate serves only some rows: it does not count.
	pgExec(t, db, `DROP INDEX hits_site_at_n`)
	pgExec(t, db, `CREATE INDEX hits_site_at_recent ON hits (site, at) WHERE at > '2026-01-10'`)
	one(check("hits", events), pgcatalog.SeverityWarning, "hits_at on (at)")

	// A partitioned table: every leaf partition needs its index.
	pgExec(t, db, `CREATE TABLE visits (site text NOT NULL, at timestamptz NOT NULL, path text NOT NULL) PARTITION BY RANGE (at)`)
	pgExec(t, db, `CREATE TABLE visits_2026_01 PARTITION OF visits FOR VALUES FROM ('2026-01-01') TO ('2026-02-01')`)
	pgExec(t, db, `CREATE TABLE visits_2026_02 PARTITION OF visits FOR VALUES FROM ('2026-02-01') TO ('2026-03-01')`)
	pgExec(t, db, `CREATE INDEX visits_2026_01_site_at ON visits_2026_01 (site, at)`)
	tab, err := pgcatalog.ReadTable(context.Background(), db, "visits")
	if err != nil {
		t.Fatal(err)
	}
	if tab.Kind != "p" || strings.Join(tab.Leaves, ",") != "visits_2026_01,visits_2026_02" {
		t.Errorf("partitioned table: kind %q leaves %v", tab.Kind, tab.Leaves)
	}
	fs := check("visits", events)
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "partition visits_2026_02 (visits_2026_02, never analyzed, size unknown) has no index beginning with the tenant column site") {
		t.Errorf("a partition without the index: %+v", fs)
	}
	// An index on the parent is created on every partition.
	pgExec(t, db, `CREATE INDEX visits_site_at ON visits (site, at)`)
	if fs := check("visits", events); len(fs) != 0 {
		t.Errorf("with the partitioned index: %+v", fs)
	}
}

// TestCheckPlanOfAHandWrittenQuery: a hand-written query's use of an
// index is read from its generic plan with sequential scans off, so a
// table of a few rows does not make a query that can use an index look
// like a scan.
func TestCheckPlanOfAHandWrittenQuery(t *testing.T) {
	db := pgDB(t, true)
	pgExec(t, db, `CREATE TABLE hits (site text NOT NULL, at timestamptz NOT NULL, n bigint NOT NULL)`)
	pgExec(t, db, `INSERT INTO hits SELECT 's' || (i % 3), timestamptz '2026-01-01' + i * interval '1 minute', i FROM generate_series(1, 6) i`)
	pgExec(t, db, `ANALYZE hits`)
	d, err := dataset.ResolveEntry(dataset.Dataset{Name: "hits", Version: 1, Partition: dataset.PartitionEventTime, PartitionColumn: "at", Relation: "hits",
		Mode: dataset.ModeIncrementalAppend, Read: dataset.ReadUnionAllPartitions,
		Columns: []dataset.Column{{Name: "at", Type: dataset.Type{Kind: dataset.KindTimestamp}}, {Name: "n", Type: dataset.Type{Kind: dataset.KindInt64}}},
		Queries: map[string]string{dataset.DialectSQLite: "SELECT at, n FROM hits WHERE site = ? AND at >= ? AND at < ?",
			dataset.DialectPostgres: "SELECT at, n FROM hits WHERE site = $1 AND at >= $2 AND at < $3 ORDER BY at"}})
	if err != nil {
		t.Fatal(err)
	}
	check := func() []pgcatalog.Finding {
		t.Helper()
		fs, err := pgcatalog.CheckDataset(context.Background(), pgConn(t, db), d)
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
	if fs := check(); len(fs) != 1 || fs[0].Check != "plan" || !strings.Contains(fs[0].Message, "sequential scan") {
		t.Errorf("no index: %+v", fs)
	}
	pgExec(t, db, `CREATE INDEX hits_site_at ON hits (site, at)`)
	if fs := check(); len(fs) != 0 {
		t.Errorf("with the index, on 6 rows: %+v", fs)
	}
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
	cat := datasettest.Example(t).Datasets()
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
	d := entry(t, tab, pgcatalog.EntryOptions{TenantColumn: "org_id", PartitionColumn: "created_at", Partition: dataset.PartitionEventTime, SourceTimeZone: "UTC"})
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
