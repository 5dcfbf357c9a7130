package account

import (
	"errors"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset/example"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
)

// TestIcebergRefusesSnapshotDatasets: an account with Iceberg tables
// cannot enable a snapshot dataset (no partition column to partition the
// table on); the refusal names the field, the value and the dataset. The
// same account without table_format is accepted.
func TestIcebergRefusesSnapshotDatasets(t *testing.T) {
	t.Parallel()
	doc := string(example.YAML()) + `
  - name: members
    version: 1
    partition: snapshot
    relation: members
    mode: full_refresh
    read: latest_snapshot
    tenant_column: account_id
    columns:
      - {name: member_id, type: string}
      - {name: attributes, type: json, nullable: true}
`
	cat := datasettest.Catalog(t, []byte(doc))
	a := valid()
	a.Datasets = []string{"events", "members"}
	if err := a.Validate(cat, testRules); err != nil {
		t.Fatalf("a snapshot dataset without Iceberg: %v", err)
	}
	a.Destination.TableFormat = TableFormatIceberg
	err := a.Validate(cat, testRules)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "destination.table_format" || fe.Value != "iceberg" || !strings.Contains(err.Error(), "dataset members is a snapshot") {
		t.Fatalf("got %v, want destination.table_format iceberg refused naming members", err)
	}
}
