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
