package dataset_test

// The schema contract (D2) checked with datasettest.Compatible, which lives
// in a test-support package so no binary links it: an external test, with
// the dataset package dot-imported so the cases read as before.

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
)

var update = flag.Bool("update", false, "rewrite testdata/schema_snapshot.json from the example catalog")

const snapshotPath = "testdata/schema_snapshot.json"

// snapshot is the public contract part of a dataset: queries and
// descriptions may change freely, so they are left out.
type snapshot struct {
	Name        string   `json:"name"`
	Version     int      `json:"version"`
	Partition   string   `json:"partition"`
	Mode        string   `json:"mode"`
	Read        string   `json:"read"`
	IDColumn    string   `json:"id_column,omitempty"`
	OrderColumn string   `json:"order_column,omitempty"`
	Columns     []Column `json:"columns"`
}

func toSnapshot(d Dataset) snapshot {
	cols := make([]Column, len(d.Columns))
	for i, c := range d.Columns {
		cols[i] = Column{Name: c.Name, Type: c.Type, Nullable: c.Nullable, Since: c.Since, NullableSince: c.NullableSince}
	}
	return snapshot{d.Name, d.Version, d.Partition, d.Mode, d.Read, d.IDColumn, d.OrderColumn, cols}
}

func (s snapshot) dataset() Dataset {
	return Dataset{Name: s.Name, Version: s.Version, Partition: s.Partition, Mode: s.Mode, Read: s.Read,
		IDColumn: s.IDColumn, OrderColumn: s.OrderColumn, Columns: s.Columns}
}

// TestSchemaSnapshot enforces D2: every shipped dataset must stay
// Compatible with the committed snapshot. Run with -update after an allowed
// change (appending a nullable column and raising the version).
func TestSchemaSnapshot(t *testing.T) {
	t.Parallel()
	ex, err := Example()
	if err != nil {
		t.Fatal(err)
	}
	cat := ex.Datasets()
	if *update {
		snaps := make([]snapshot, len(cat))
		for i, d := range cat {
			snaps[i] = toSnapshot(d)
		}
		b, err := json.MarshalIndent(snaps, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(snapshotPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(snapshotPath, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(snapshotPath)
	if err != nil {
		t.Fatalf("read snapshot (run go test -run TestSchemaSnapshot -update to create it): %v", err)
	}
	var snaps []snapshot
	if err := json.Unmarshal(b, &snaps); err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps {
		t.Run(s.Name, func(t *testing.T) {
			cur, err := ex.Get(s.Name)
			if err != nil {
				t.Fatalf("dataset removed from the catalog: %v", err)
			}
			if err := datasettest.Compatible(s.dataset(), cur); err != nil {
				t.Fatal(err)
			}
		})
	}
	if len(snaps) != len(cat) {
		t.Errorf("snapshot has %d datasets, catalog %d: run with -update to record new ones", len(snaps), len(cat))
	}
}

func base() Dataset {
	return Dataset{Name: "t", Version: 1, Partition: PartitionEventTime, Mode: ModeIncrementalAppend, Read: ReadUnionAllPartitions,
		Columns: []Column{
			{Name: "id", Type: Type{Kind: KindString}},
			{Name: "at", Type: Type{Kind: KindTimestamp}},
			{Name: "amount", Type: DecimalType(18, 2), Nullable: true},
		}}
}

func TestCompatible(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(d *Dataset)
		want   string // "" means allowed; else a substring of the error
	}{
		{"unchanged", func(d *Dataset) {}, ""},
		{"append nullable with version bump", func(d *Dataset) {
			d.Version = 2
			d.Columns = append(d.Columns, Column{Name: "note", Type: Type{Kind: KindString}, Nullable: true, Since: 2})
		}, ""},
		{"loosen required to nullable", func(d *Dataset) { d.Columns[1].Nullable = true; d.Columns[1].NullableSince = 1 }, ""},
		{"loosen with a version bump", func(d *Dataset) {
			d.Version = 2
			d.Columns[1].Nullable, d.Columns[1].NullableSince = true, 2
		}, ""},
		{"append over two versions", func(d *Dataset) {
			d.Version = 3
			d.Columns = append(d.Columns,
				Column{Name: "note", Type: Type{Kind: KindString}, Nullable: true, Since: 2},
				Column{Name: "tag", Type: Type{Kind: KindString}, Nullable: true, Since: 3})
		}, ""},
		{"append without since", func(d *Dataset) {
			d.Version = 2
			d.Columns = append(d.Columns, Column{Name: "note", Type: Type{Kind: KindString}, Nullable: true})
		}, `appended column "note" has since 1, want the version that appended it (2..2)`},
		{"append with a future since", func(d *Dataset) {
			d.Version = 2
			d.Columns = append(d.Columns, Column{Name: "note", Type: Type{Kind: KindString}, Nullable: true, Since: 3})
		}, `appended column "note" has since 3`},
		{"since of a kept column changed", func(d *Dataset) { d.Version = 2; d.Columns[0].Since = 2 }, `column "id" since changed from 1 to 2`},
		{"loosen without nullable_since", func(d *Dataset) { d.Columns[1].Nullable = true }, `column "at" loosened to nullable needs nullable_since 1..1`},
		{"nullable_since invented for an always nullable column", func(d *Dataset) { d.Columns[2].NullableSince = 1 }, `column "amount" nullable_since changed from 0 to 1`},
		{"description and dictionary are free", func(d *Dataset) { d.Columns[0].Description = "x"; d.Columns[0].Dictionary = DictionaryOn }, ""},
		{"rename", func(d *Dataset) { d.Columns[1].Name = "at2" }, `column "at" renamed or replaced by "at2"`},
		{"remove last", func(d *Dataset) { d.Columns = d.Columns[:2] }, `column "amount" removed`},
		{"remove middle", func(d *Dataset) { d.Columns = append(d.Columns[:1:1], d.Columns[2]) }, `column "at" removed`},
		{"reorder", func(d *Dataset) { d.Columns[0], d.Columns[1] = d.Columns[1], d.Columns[0] }, `column "id" moved from position 0 to 1`},
		{"retype", func(d *Dataset) { d.Columns[1].Type = Type{Kind: KindString} }, `column "at" retyped from timestamp to string`},
		{"change decimal scale", func(d *Dataset) { d.Columns[2].Type = DecimalType(18, 4) }, `column "amount" retyped from decimal(18,2) to decimal(18,4)`},
		{"tighten nullability", func(d *Dataset) { d.Columns[2].Nullable = false }, `column "amount" changed from nullable to required`},
		{"append required", func(d *Dataset) {
			d.Version = 2
			d.Columns = append(d.Columns, Column{Name: "n", Type: Type{Kind: KindInt64}})
		}, `appended column "n" must be nullable`},
		{"append without version bump", func(d *Dataset) {
			d.Columns = append(d.Columns, Column{Name: "n", Type: Type{Kind: KindInt64}, Nullable: true})
		}, `columns appended (first "n") without raising version 1`},
		{"lower version", func(d *Dataset) { d.Version = 0 }, "version lowered from 1 to 0"},
		{"partition semantics", func(d *Dataset) { d.Partition = PartitionStatDate }, `partition changed`},
		{"dataset renamed", func(d *Dataset) { d.Name = "u" }, `renamed to "u"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev, next := base(), base()
			tt.change(&next)
			err := datasettest.Compatible(prev, next)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("want allowed, got %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want refusal containing %q, got %v", tt.want, err)
			}
		})
	}
}
