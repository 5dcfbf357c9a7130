package dataset

import (
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
)

const yamlSnapshot = `
datasets:
  - name: members
    version: 1
    partition: snapshot
    relation: app.members
    mode: full_refresh
    read: latest_snapshot
    tenant_column: org_id
    order_by: [member_id]
    columns:
      - {name: member_id, type: string}
      - {name: role, type: string}
      - {name: joined_at, type: timestamp}
      - {name: attributes, type: json, nullable: true}
`

// TestSnapshotGeneratedQuery: a snapshot dataset's generated query reads
// the tenant's whole current table (no partition-column predicate, bound
// to the account alone) and it gets no fingerprint.
func TestSnapshotGeneratedQuery(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(yamlSnapshot))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := s.Get("members")
	want := map[string]string{
		DialectSQLite:   "SELECT member_id, role, joined_at, attributes FROM app.members WHERE org_id = ? ORDER BY member_id",
		DialectPostgres: "SELECT member_id, role, joined_at, attributes FROM app.members WHERE org_id = $1 ORDER BY member_id",
	}
	for dialect, q := range want {
		if got, _ := d.Query(dialect); got != q {
			t.Errorf("%s query:\n got %s\nwant %s", dialect, got, q)
		}
		if _, err := d.FingerprintQuery(dialect); err == nil {
			t.Errorf("%s: a snapshot got a fingerprint query", dialect)
		}
	}
	if !d.IsSnapshot() || d.Sliceable() {
		t.Errorf("IsSnapshot %v Sliceable %v, want true false", d.IsSnapshot(), d.Sliceable())
	}
	// Without order_by the first column orders the copy.
	s, err = Parse([]byte(strings.Replace(yamlSnapshot, "    order_by: [member_id]\n", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	d, _ = s.Get("members")
	if q, _ := d.Query(DialectPostgres); !strings.HasSuffix(q, "ORDER BY member_id") {
		t.Errorf("default order: %s", q)
	}
	// Rows are not checked against a window: every current row is in the copy.
	w, err := d.Window(civil.MustParse("2026-03-05"), time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 6, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	b := NewBatch(d, 4)
	b.Reset(1)
	if err := b.AppendCoerced([]any{"m1", "owner", time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), nil}); err != nil {
		t.Fatal(err)
	}
	if err := w.CheckBatch(b); err != nil {
		t.Errorf("a snapshot row joined in 2020 refused by the 2026-03-05 copy: %v", err)
	}
}

// TestSnapshotIncoherentRefused: every combination of partition, mode,
// read and the window fields that does not make a snapshot (or an
// incremental feed) is refused with the field and the value named, and
// nothing is loaded.
func TestSnapshotIncoherentRefused(t *testing.T) {
	t.Parallel()
	hand := strings.Replace(yamlSnapshot, "    tenant_column: org_id\n    order_by: [member_id]\n",
		"    queries:\n      sqlite: \"SELECT member_id, role, joined_at, attributes FROM app.members WHERE org_id = ?\"\n      postgres: \"SELECT member_id, role, joined_at, attributes FROM app.members WHERE org_id = $1\"\n", 1)
	if _, err := Parse([]byte(hand)); err != nil {
		t.Fatalf("a hand-written snapshot query bound to the account: %v", err)
	}
	for _, tt := range []struct {
		name, doc, from, to, want string
	}{
		{"snapshot with incremental mode", yamlSnapshot, "mode: full_refresh", "mode: incremental_append", `partition "snapshot" needs mode "full_refresh"`},
		{"snapshot read as a union", yamlSnapshot, "read: latest_snapshot", "read: union_all_partitions", `needs read "latest_snapshot"`},
		{"snapshot with a partition column", yamlSnapshot, "    relation: app.members\n", "    relation: app.members\n    partition_column: joined_at\n", `partition_column "joined_at": a snapshot has no partition column`},
		{"snapshot with a changed column", yamlSnapshot, "    order_by: [member_id]\n", "    order_by: [member_id]\n    changed_column: joined_at\n", `changed_column "joined_at"`},
		{"snapshot with id and order columns", yamlSnapshot, "    order_by: [member_id]\n", "    order_by: [member_id]\n    id_column: member_id\n", `id_column "member_id"`},
		{"event_time as full refresh", yamlDataset, "mode: incremental_append\n    read: union_all_partitions", "mode: full_refresh\n    read: latest_snapshot", `mode "full_refresh" needs partition "snapshot"`},
		{"snapshot query with a window", hand, "WHERE org_id = $1", "WHERE org_id = $1 AND joined_at >= $2 AND joined_at < $3", "unexpected placeholder $2 (bind only $1 account"},
		{"snapshot sqlite query with a window", hand, "WHERE org_id = ?", "WHERE org_id = ? AND joined_at >= ?", "want 1 ? placeholders, found 2"},
		{"snapshot with a fingerprint", hand, "    queries:\n", "    fingerprint:\n      sqlite: \"SELECT count(*) FROM app.members WHERE org_id = ?\"\n      postgres: \"SELECT count(*) FROM app.members WHERE org_id = $1\"\n    queries:\n", "fingerprint: a snapshot dataset has none"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := strings.Replace(tt.doc, tt.from, tt.to, 1)
			if doc == tt.doc {
				t.Fatalf("%q not in the catalog", tt.from)
			}
			s, err := Parse([]byte(doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			if s != nil {
				t.Fatal("a catalog was returned with the error")
			}
			if !strings.Contains(err.Error(), "datasets[0]") {
				t.Errorf("%v does not name the dataset's position", err)
			}
		})
	}
}
