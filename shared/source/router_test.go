package source

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
)

// TestDSNsFromEnv: the variables that name sources and shards, and the
// refusals of a bad name or a source named twice, each naming the variable.
func TestDSNsFromEnv(t *testing.T) {
	got, err := DSNsFromEnv([]string{
		"SOURCE_DRIVER=pgx", "SOURCE_DSN=postgres://a", "SOURCE_DSN_BILLING=postgres://b",
		"SOURCE_DSN_DEFAULT__EU2=postgres://c", "SOURCE_DSN_PARAMETER_CRM__US=/daybook/source-dsn/crm-us",
		"SOURCE_DSN_PARAMETERS=ledger=/daybook/source-dsn-ledger, crm/eu = /daybook/source-dsn/crm-eu", "SOURCE_DSN_EMPTY=",
	})
	if err != nil {
		t.Fatal(err)
	}
	// The DSN itself wins over the parameter, whichever comes first (a
	// local run's SOURCE_DSN over the deployed SOURCE_DSN_PARAMETER).
	for _, env := range [][]string{{"SOURCE_DSN_PARAMETER=/daybook/source-dsn", "SOURCE_DSN=file:x"}, {"SOURCE_DSN=file:x", "SOURCE_DSN_PARAMETER=/daybook/source-dsn"}} {
		if d, err := DSNsFromEnv(env); err != nil || d[Key{Source: "default"}] != (DSN{Value: "file:x", Var: "SOURCE_DSN"}) {
			t.Errorf("%v: %+v %v", env, d, err)
		}
	}
	want := map[Key]DSN{
		{Source: "default"}:               {Value: "postgres://a", Var: "SOURCE_DSN"},
		{Source: "billing"}:               {Value: "postgres://b", Var: "SOURCE_DSN_BILLING"},
		{Source: "default", Shard: "eu2"}: {Value: "postgres://c", Var: "SOURCE_DSN_DEFAULT__EU2"},
		{Source: "crm", Shard: "us"}:      {Parameter: "/daybook/source-dsn/crm-us", Var: "SOURCE_DSN_PARAMETER_CRM__US"},
		{Source: "ledger"}:                {Parameter: "/daybook/source-dsn-ledger", Var: "SOURCE_DSN_PARAMETERS"},
		{Source: "crm", Shard: "eu"}:      {Parameter: "/daybook/source-dsn/crm-eu", Var: "SOURCE_DSN_PARAMETERS"},
	}
	if len(got) != len(want) {
		t.Errorf("got %d sources, want %d: %+v", len(got), len(want), got)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %+v, want %+v", k, got[k], w)
		}
		if w.Var != "SOURCE_DSN_PARAMETERS" && k.EnvName() != w.Var && k.ParameterEnvName() != w.Var {
			t.Errorf("%s: EnvName %s ParameterEnvName %s, neither is %s", k, k.EnvName(), k.ParameterEnvName(), w.Var)
		}
	}
	for _, tt := range []struct {
		env  []string
		want string
	}{
		{[]string{"SOURCE_DSN_BAD__=x"}, `SOURCE_DSN_BAD__: shard name ""`},
		{[]string{"SOURCE_DSN_A__B__C=x"}, `SOURCE_DSN_A__B__C: shard name "b__c"`},
		{[]string{"SOURCE_DSN_9LIVES=x"}, `SOURCE_DSN_9LIVES: source name "9lives"`},
		{[]string{"SOURCE_DSN=x", "SOURCE_DSN_DEFAULT=y"}, "SOURCE_DSN_DEFAULT: source default already has a connection string from SOURCE_DSN"},
		{[]string{"SOURCE_DSN_PARAMETER_CRM=/a", "SOURCE_DSN_PARAMETERS=crm=/b"}, "SOURCE_DSN_PARAMETERS: source crm already has a connection string from SOURCE_DSN_PARAMETER_CRM"},
		{[]string{"SOURCE_DSN_PARAMETERS=crm/eu"}, `SOURCE_DSN_PARAMETERS item 1 "crm/eu"`},
		{[]string{"SOURCE_DSN_PARAMETERS=crm=daybook/x"}, `SOURCE_DSN_PARAMETERS item 1 "crm=daybook/x"`},
	} {
		if _, err := DSNsFromEnv(tt.env); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: got %v, want an error containing %q", tt.env, err, tt.want)
		}
	}
}

// TestRouterTwoSourcesAndShards reads datasets from three PostgreSQL
// schemas: the default source sharded in two (eu, us: each tenant's rows
// are in its shard) and a second, unsharded source (billing). Each query
// reads its dataset's source, the account's shard of it where it is
// sharded, and the provenance names source and shard, never the DSN. A
// shard or source the deployment has no DSN for is refused, naming the
// variable that would supply it.
func TestRouterTwoSourcesAndShards(t *testing.T) {
	ctx := context.Background()
	eu, us, billing := pgDB(t, true), pgDB(t, true), pgDB(t, true)
	for shard, db := range map[string]*sql.DB{"eu": eu, "us": us} {
		pgExec(t, db, `CREATE TABLE notes (org_id text NOT NULL, note_id text NOT NULL, created_at timestamptz NOT NULL, attributes jsonb)`)
		for _, org := range []string{"acct_a", "acct_b"} {
			pgExec(t, db, `INSERT INTO notes VALUES ($1, $2, '2026-03-05 10:00:00+00', NULL)`, org, shard+"-"+org)
		}
	}
	pgExec(t, billing, `CREATE TABLE plans (org_id text NOT NULL, plan text NOT NULL, attributes jsonb)`)
	pgExec(t, billing, `INSERT INTO plans VALUES ('acct_a', 'team', NULL), ('acct_b', 'free', NULL)`)

	cat, err := dataset.Parse([]byte(`
datasets:
  - name: notes
    version: 1
    partition: event_time
    partition_column: created_at
    relation: notes
    mode: incremental_append
    read: union_all_partitions
    tenant_column: org_id
    columns:
      - {name: note_id, type: string}
      - {name: created_at, type: timestamp}
      - {name: attributes, type: json, nullable: true}
  - name: plans
    version: 1
    partition: snapshot
    relation: plans
    source: billing
    mode: full_refresh
    read: latest_snapshot
    tenant_column: org_id
    columns:
      - {name: plan, type: string}
      - {name: attributes, type: json, nullable: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	notes, _ := cat.Get("notes")
	plans, _ := cat.Get("plans")
	open := func(db *sql.DB, name string) *SQL {
		s, err := NewSQL(db, dataset.DialectPostgres, "postgres:"+name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	r, err := NewRouter(map[Key]*SQL{
		{Source: "default", Shard: "eu"}: open(eu, "eu"),
		{Source: "default", Shard: "us"}: open(us, "us"),
		{Source: "billing"}:              open(billing, "billing"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Covers(cat.Datasets()); err != nil {
		t.Fatal(err)
	}
	day := civil.MustParse("2026-03-05")
	start := time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC)
	query := func(acct, shard string, ds dataset.Dataset) Query {
		return Query{AccountID: acct, Dataset: ds, Day: day, Start: start, End: start.AddDate(0, 0, 1), Shard: shard}
	}
	read := func(q Query) ([]string, Provenance, error) {
		var got []string
		prov, err := r.Batches(ctx, q, func(b *dataset.Batch) error {
			for i := range b.Len() {
				got = append(got, b.Row(i, nil)[0].(string))
			}
			return nil
		})
		return got, prov, err
	}
	for _, tt := range []struct {
		acct, shard string
		ds          dataset.Dataset
		want        string
		prov        [2]string
	}{
		{"acct_a", "eu", notes, "eu-acct_a", [2]string{"default", "eu"}},
		{"acct_b", "us", notes, "us-acct_b", [2]string{"default", "us"}},
		{"acct_a", "eu", plans, "team", [2]string{"billing", ""}}, // billing has no shards: the account's shard does not apply
		{"acct_b", "", plans, "free", [2]string{"billing", ""}},
	} {
		got, prov, err := read(query(tt.acct, tt.shard, tt.ds))
		if err != nil {
			t.Fatalf("%s %s shard %q: %v", tt.ds.Name, tt.acct, tt.shard, err)
		}
		if len(got) != 1 || got[0] != tt.want {
			t.Errorf("%s %s shard %q: read %v, want [%s]", tt.ds.Name, tt.acct, tt.shard, got, tt.want)
		}
		if prov.SourceName != tt.prov[0] || prov.SourceShard != tt.prov[1] || prov.RowCount != 1 {
			t.Errorf("%s %s: provenance %+v, want source %s shard %q", tt.ds.Name, tt.acct, prov, tt.prov[0], tt.prov[1])
		}
		b, _ := json.Marshal(prov)
		if s := string(b); strings.Contains(s, "search_path") || strings.Contains(s, "host=") || strings.Contains(s, "postgres:") {
			t.Errorf("the provenance names the connection: %s", s)
		}
	}
	for _, tt := range []struct {
		q    Query
		want string
	}{
		{query("acct_a", "ap", notes), `source "default" has no shard "ap" (the account's source_shard): set SOURCE_DSN_DEFAULT__AP or SOURCE_DSN_PARAMETER_DEFAULT__AP`},
		{query("acct_a", "", notes), `source "default" is sharded and account acct_a names no source_shard`},
	} {
		if _, _, err := read(tt.q); !errors.Is(err, ErrNoSource) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("got %v, want ErrNoSource containing %q", err, tt.want)
		}
		if _, err := r.Fingerprint(ctx, tt.q); !errors.Is(err, ErrNoSource) {
			t.Errorf("fingerprint: got %v, want ErrNoSource", err)
		}
	}
	crm := notes
	crm.Source = "crm"
	if err := r.Covers([]dataset.Dataset{notes, crm}); !errors.Is(err, ErrNoSource) || !strings.Contains(err.Error(), `dataset notes: source "crm": set SOURCE_DSN_CRM or SOURCE_DSN_PARAMETER_CRM`) {
		t.Errorf("Covers: %v", err)
	}
}
