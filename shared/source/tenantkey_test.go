package source

import (
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// clicksCatalog is a dataset keyed by an integer tenant column, with its
// queries generated from tenant_column, as `catalog init` writes it for a
// bigint column.
const clicksCatalog = `
datasets:
  - name: clicks
    version: 1
    partition: event_time
    partition_column: created_at
    relation: clicks
    mode: incremental_append
    read: union_all_partitions
    tenant_column: org_id
    tenant_type: int64
    columns:
      - {name: click_id, type: string}
      - {name: created_at, type: timestamp}
      - {name: attributes, type: json, nullable: true}
`

// TestPostgresIntegerTenant: a bigint tenant column is exported through
// the pgx binary path, the account's key bound as the integer, and the
// account reads its tenant's rows only. On the old code every partition
// failed with "parameter 1 of type int64": the binary path bound only text
// and time parameters.
func TestPostgresIntegerTenant(t *testing.T) {
	db := pgDB(t, true)
	pgExec(t, db, `CREATE TABLE clicks (org_id bigint NOT NULL, click_id text NOT NULL, created_at timestamptz NOT NULL, attributes jsonb)`)
	pgExec(t, db, `INSERT INTO clicks VALUES (7, 'mine', '2026-11-28 10:00:00+00', NULL), (8, 'theirs', '2026-11-28 11:00:00+00', NULL)`)
	cat, err := dataset.Parse([]byte(clicksCatalog))
	if err != nil {
		t.Fatal(err)
	}
	ds, _ := cat.Get("clicks")
	q := dayQuery(ds, "acct_clicksaccountaa", time.UTC)
	q.TenantKey = "7"
	rows, prov, err := collect(t, newPGSource(t, db), q)
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, ds, rows, [][]any{{"mine", utc("2026-11-28T10:00:00Z"), nil}})
	checkProvenance(t, prov, ds, 1, "2026-11-28T00:00:00.000000Z", "2026-11-29T00:00:00.000000Z")
}
