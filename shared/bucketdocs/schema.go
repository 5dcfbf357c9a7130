package bucketdocs

import (
	"encoding/json"
	"fmt"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/layout"
)

// MaxSchemaBytes bounds a read of a schema document (the exporter reads
// the delivered one back before each export).
const MaxSchemaBytes = 4 << 20

// SchemaDoc is the document at `<prefix>/v1/_schemas/<dataset>.json`.
type SchemaDoc struct {
	FormatVersion int    `json:"format_version"`
	Contract      string `json:"contract"` // the layout version, "v1"
	Dataset       string `json:"dataset"`
	Description   string `json:"description"`
	// SchemaVersion is the dataset's current schema version; every
	// partition's _manifest.json says the version it was written with.
	SchemaVersion int             `json:"schema_version"`
	Partition     SchemaPartition `json:"partition"`
	Mode          SchemaEnum      `json:"mode"`
	Read          SchemaEnum      `json:"read"`
	CurrentState  *SchemaCurrent  `json:"current_state,omitempty"`
	// LatestSnapshot is set for a snapshot dataset: how to read its newest
	// copy.
	LatestSnapshot *SchemaLatest    `json:"latest_snapshot,omitempty"`
	Columns        []SchemaColumn   `json:"columns"`
	Files          SchemaFileLayout `json:"files"`
}

// SchemaPartition is the day column the path carries and what it means.
type SchemaPartition struct {
	Column    string `json:"column"`    // "dt"
	Type      string `json:"type"`      // "date"
	Semantics string `json:"semantics"` // event_time | activity | stat_date | snapshot
	Meaning   string `json:"meaning"`
}

// SchemaEnum is an enumeration value with its meaning in words.
type SchemaEnum struct {
	Value   string `json:"value"`
	Meaning string `json:"meaning"`
}

// SchemaCurrent says how to get one current row per id (activity datasets).
type SchemaCurrent struct {
	IDColumn    string `json:"id_column"`
	OrderColumn string `json:"order_column"`
	Rule        string `json:"rule"`
}

// SchemaLatest says how to read a snapshot dataset (read
// latest_snapshot): the day column whose newest committed value is the
// table, and in words.
type SchemaLatest struct {
	DayColumn string `json:"day_column"` // "dt"
	Rule      string `json:"rule"`
}

// SchemaColumn is one column, in file order.
type SchemaColumn struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Nullable    bool   `json:"nullable"`
	Description string `json:"description"`
	// Since is the schema version that added the column.
	Since int `json:"since"`
	// NullableSince is set on a column that was required and became
	// nullable: the schema version from which it may be null.
	NullableSince int `json:"nullable_since,omitempty"`
}

// SchemaFileLayout is where the dataset's partitions are, relative to the
// root of its contract, `<prefix>/<contract>/`.
type SchemaFileLayout struct {
	Partition string `json:"partition"` // "<dataset>/dt=YYYY-MM-DD/"
	Data      string `json:"data"`      // "part-*"
	Manifest  string `json:"manifest"`
	Success   string `json:"success"`
	Load      string `json:"load"`
}

// NewSchemaDoc describes ds for a customer.
func NewSchemaDoc(ds dataset.Dataset) (SchemaDoc, error) {
	if err := ds.Validate(); err != nil {
		return SchemaDoc{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	d := SchemaDoc{
		FormatVersion: FormatVersion,
		Contract:      ds.ContractVersion(),
		Dataset:       ds.Name,
		Description:   ds.Description,
		SchemaVersion: ds.Version,
		Partition: SchemaPartition{Column: "dt", Type: "date", Semantics: ds.Partition,
			Meaning: partitionMeaning[ds.Partition]},
		Mode: SchemaEnum{Value: ds.Mode, Meaning: modeMeaning[ds.Mode]},
		Read: SchemaEnum{Value: ds.Read, Meaning: readMeaning[ds.Read]},
		Files: SchemaFileLayout{
			Partition: ds.Name + "/dt=YYYY-MM-DD/",
			Data:      layout.DataPrefix + "*",
			Manifest:  layout.ManifestName,
			Success:   layout.SuccessName,
			Load:      layout.LoadDir + "/<engine>.sql",
		},
	}
	if ds.Partition == dataset.PartitionActivity {
		d.CurrentState = &SchemaCurrent{IDColumn: ds.IDColumn, OrderColumn: ds.OrderColumn, Rule: currentStateRule(ds)}
	}
	if ds.IsSnapshot() {
		d.LatestSnapshot = &SchemaLatest{DayColumn: "dt", Rule: latestSnapshotRule(ds)}
	}
	for _, c := range ds.Columns {
		col := SchemaColumn{Name: c.Name, Type: c.Type.String(), Nullable: c.Nullable, Description: c.Description, Since: c.SinceVersion()}
		if c.Loosened() {
			col.NullableSince = c.NullableSince
		}
		d.Columns = append(d.Columns, col)
	}
	return d, nil
}

// Schema renders the schema document of ds as indented JSON.
func Schema(ds dataset.Dataset) ([]byte, error) {
	d, err := NewSchemaDoc(ds)
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode schema of %s: %w", ds.Name, err)
	}
	return append(b, '\n'), nil
}
