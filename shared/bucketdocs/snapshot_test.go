package bucketdocs

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// TestSnapshotDocs: for a snapshot dataset the README and _schemas/ say
// what a day is (a complete copy, never restated) and how to read it (the
// newest day with _SUCCESS, what the load scripts keep, Athena's view); an
// incremental dataset's documents say neither.
func TestSnapshotDocs(t *testing.T) {
	t.Parallel()
	s, err := dataset.Parse([]byte(`
datasets:
  - name: members
    version: 1
    partition: snapshot
    relation: members
    mode: full_refresh
    read: latest_snapshot
    tenant_column: org_id
    columns:
      - {name: member_id, type: string}
      - {name: attributes, type: json, nullable: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	ds := append(s.Datasets(), catalog(t)[0])
	files, err := Files(Input{Bucket: "b", Prefix: "p", Format: "parquet", TimeZone: "UTC", Datasets: ds})
	if err != nil {
		t.Fatal(err)
	}
	readme := string(files[len(files)-1].Body)
	members := readme[strings.Index(readme, "### members"):strings.Index(readme, "### "+ds[1].Name)]
	for _, want := range []string{
		"(`snapshot`): A day is a complete copy of the table's current rows",
		"A copy is never restated",
		"(`read`: `latest_snapshot`): The table is the latest day that has _SUCCESS",
		"Never union the days",
		"keeps only the newest day loaded",
		"the view members_latest",
	} {
		if !strings.Contains(members, want) {
			t.Errorf("the README's members section lacks %q:\n%s", want, members)
		}
	}
	if other := readme[strings.Index(readme, "### "+ds[1].Name):]; strings.Contains(other, "newest day loaded") {
		t.Errorf("an incremental dataset's section speaks of the newest copy")
	}
	var doc, inc SchemaDoc
	if err := json.Unmarshal(files[0].Body, &doc); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(files[1].Body, &inc); err != nil {
		t.Fatal(err)
	}
	if doc.Dataset != "members" || doc.Read.Value != dataset.ReadLatestSnapshot || doc.Mode.Value != dataset.ModeFullRefresh ||
		doc.Partition.Semantics != dataset.PartitionSnapshot || doc.LatestSnapshot == nil || doc.LatestSnapshot.DayColumn != "dt" ||
		!strings.Contains(doc.LatestSnapshot.Rule, "newest day loaded") {
		t.Errorf("the members schema document: %+v", doc)
	}
	if inc.LatestSnapshot != nil {
		t.Errorf("%s has latest_snapshot %+v", inc.Dataset, inc.LatestSnapshot)
	}
}

// TestLateDataPerDataset: each dataset's section says which late changes
// deliver a day again, as its fingerprint sees them: updates too with a
// changed_column, rows added or removed with the generated count alone,
// nothing without a fingerprint.
func TestLateDataPerDataset(t *testing.T) {
	t.Parallel()
	s, err := dataset.Parse([]byte(`
datasets:
  - name: orders
    version: 1
    partition: event_time
    partition_column: created_at
    relation: orders
    mode: incremental_append
    read: union_all_partitions
    tenant_column: org_id
    changed_column: updated_at
    columns:
      - {name: created_at, type: timestamp}
  - name: clicks
    version: 1
    partition: event_time
    partition_column: clicked_at
    relation: clicks
    mode: incremental_append
    read: union_all_partitions
    tenant_column: company_id
    tenant_type: int64
    columns:
      - {name: clicked_at, type: timestamp, source_time_zone: UTC}
  - name: visits
    version: 1
    partition: event_time
    partition_column: at
    relation: visits
    mode: incremental_append
    read: union_all_partitions
    columns:
      - {name: at, type: timestamp}
    queries:
      sqlite: SELECT at FROM visits WHERE org = ? AND at >= ? AND at < ?
      postgres: SELECT at FROM visits WHERE org = $1 AND at >= $2 AND at < $3
`))
	if err != nil {
		t.Fatal(err)
	}
	ds := s.Datasets()
	b, err := README(Input{Bucket: "b", Prefix: "p", Format: "parquet", TimeZone: "UTC", Datasets: ds})
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for name, want := range map[string]string{
		"orders": "- **Late data**: each recently closed day is checked again a few times a day; a day whose rows were added, removed or changed since it was exported is delivered again",
		"clicks": "A row changed in place without a row added or removed is not noticed",
		"visits": "- **Late data**: days are not checked again",
	} {
		i := strings.Index(readme, "### "+name+"\n")
		j := strings.Index(readme[i+1:], "\n#")
		if i < 0 || j < 0 || !strings.Contains(readme[i:i+1+j], want) {
			t.Errorf("the README's %s section lacks %q", name, want)
		}
	}
}
