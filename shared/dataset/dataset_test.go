package dataset

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/schema_snapshot.json from datasets.json")

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
	cat, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
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
			cur, err := Get(s.Name)
			if err != nil {
				t.Fatalf("dataset removed from the catalog: %v", err)
			}
			if err := Compatible(s.dataset(), cur); err != nil {
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
			err := Compatible(prev, next)
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

func TestCatalog(t *testing.T) {
	names, err := Names()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names, ","); got != "events,profiles,daily_stats" {
		t.Fatalf("names = %s", got)
	}
	ev, err := Get("events")
	if err != nil {
		t.Fatal(err)
	}
	if ev.Partition != PartitionEventTime || ev.Columns[7].Type != DecimalType(18, 2) || ev.Columns[1].Dictionary != DictionaryOn || ev.Columns[0].Dictionary != DictionaryOff {
		t.Fatalf("unexpected events declaration: %+v", ev)
	}
	p, _ := Get("profiles")
	if p.IDColumn != "profile_id" || p.OrderColumn != "last_seen_at" || p.Read != ReadUnionAllPartitions {
		t.Fatalf("profiles: %+v", p)
	}
	// Get returns a copy: mutating it must not leak into the catalog.
	ev.Columns[0].Name = "mutated"
	again, _ := Get("events")
	if again.Columns[0].Name != "event_id" {
		t.Fatal("Get leaked a shared slice")
	}

	_, err = Get("nope")
	if !errors.Is(err, ErrUnknownDataset) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("Get(nope) = %v", err)
	}
	for _, dialect := range Dialects {
		q, err := ev.Query(dialect)
		if err != nil || q == "" {
			t.Fatalf("Query(%s) = %q, %v", dialect, q, err)
		}
		ddl, err := SourceDDL(dialect)
		if err != nil || !strings.Contains(ddl, "inserted_at") {
			t.Fatalf("SourceDDL(%s): %v", dialect, err)
		}
	}
	if _, err := ev.Query("oracle"); !errors.Is(err, ErrUnknownDialect) || !strings.Contains(err.Error(), "oracle") {
		t.Fatalf("Query(oracle) = %v", err)
	}
	if _, err := SourceDDL("../x"); !errors.Is(err, ErrUnknownDialect) {
		t.Fatalf("SourceDDL(../x) = %v", err)
	}
}

// A column without "since" in datasets.json was there from version 1, and
// the catalog says so explicitly (the schema snapshot records it).
func TestSinceDefault(t *testing.T) {
	cat, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range cat {
		for _, c := range d.Columns {
			if c.Since < 1 || c.Since > d.Version {
				t.Errorf("%s.%s: since %d, want 1..%d", d.Name, c.Name, c.Since, d.Version)
			}
		}
	}
	doc := `{"datasets":[{"name":"x","version":2,"partition":"event_time","partition_column":"at","relation":"x","mode":"incremental_append","read":"union_all_partitions",
	"columns":[{"name":"at","type":"timestamp"},{"name":"attributes","type":"json","nullable":true,"since":2}],
	"queries":{"sqlite":"select ? ? ? from x","postgres":"select $1,$2,$3 from x"}}]}`
	ds, err := ParseCatalog([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got := []int{ds[0].Columns[0].Since, ds[0].Columns[1].Since}; got[0] != 1 || got[1] != 2 {
		t.Fatalf("since = %v, want [1 2]", got)
	}
	if (Column{}).SinceVersion() != 1 || (Column{Since: 3}).SinceVersion() != 3 {
		t.Fatal("SinceVersion does not default to 1")
	}
}

func TestParseCatalogRefuses(t *testing.T) {
	ok := `{"name":"x","version":1,"partition":"event_time","partition_column":"at","relation":"src.x","mode":"incremental_append","read":"union_all_partitions",
	"columns":[{"name":"at","type":"timestamp"},{"name":"attributes","type":"json","nullable":true}],
	"queries":{"sqlite":"select ? ? ? FROM src.x","postgres":"select $1,$2,$3 from src.x where 1=1"}}`
	tests := []struct{ name, doc, want string }{
		{"valid", ok, ""},
		{"unknown field", strings.Replace(ok, `"version":1`, `"version":1,"colour":"red"`, 1), "unknown field"},
		{"bad type", strings.Replace(ok, `"type":"json"`, `"type":"decimal(40,2)"`, 1), "decimal precision 40"},
		{"no attributes", strings.Replace(ok, `"name":"attributes"`, `"name":"extra"`, 1), `missing json column "attributes"`},
		{"bad partition", strings.Replace(ok, `event_time`, `hourly`, 1), `unknown partition "hourly"`},
		{"too few params", strings.Replace(ok, `select ? ? ?`, `select ? ?`, 1), "want 3 ? placeholders"},
		{"reserved dt", strings.Replace(ok, `"columns":[`, `"columns":[{"name":"dt","type":"date"},`, 1), "reserved"},
		{"activity needs id", strings.Replace(ok, `event_time`, `activity`, 1), `id_column "" is not a column`},
		{"no partition column", strings.Replace(ok, `"partition_column":"at",`, ``, 1), `partition_column "" is not a column`},
		{"nullable partition column", strings.Replace(ok, `"type":"timestamp"}`, `"type":"timestamp","nullable":true}`, 1), "partition_column at must be a required timestamp"},
		{"stat_date partitions by a date", strings.Replace(ok, `event_time`, `stat_date`, 1), "partition_column at must be a required date"},
		{"bad relation", strings.Replace(ok, `"relation":"src.x"`, `"relation":"x; drop"`, 1), `relation "x; drop" must match`},
		{"query reads another relation", strings.Replace(ok, `from src.x where`, `from src.y where`, 1), `postgres query does not read FROM its relation "src.x"`},
		{"incremental feeds are read as a union", strings.Replace(ok, `union_all_partitions`, `latest_snapshot`, 1), `needs read "union_all_partitions"`},
		{"since above the version", strings.Replace(ok, `"nullable":true}`, `"nullable":true,"since":2}`, 1), "since 2 outside 1..1"},
		{"since out of order", strings.Replace(strings.Replace(ok, `"version":1`, `"version":2`, 1),
			`"columns":[`, `"columns":[{"name":"late","type":"string","nullable":true,"since":2},`, 1), "since 1 is before the since 2"},
		{"appended column required", strings.Replace(strings.Replace(ok, `"version":1`, `"version":2`, 1),
			`"nullable":true}`, `"nullable":true},{"name":"late","type":"string","since":2}`, 1), "appended in version 2 must be nullable"},
		{"nullable_since on a required column", strings.Replace(ok, `"columns":[`, `"columns":[{"name":"n","type":"int64","nullable_since":1},`, 1), "nullable_since is set on a required column"},
		{"nullable_since above the version", strings.Replace(ok, `"nullable":true}`, `"nullable":true,"nullable_since":2}`, 1), "nullable_since 2 outside 1..1"},
		{"nullable_since on an appended column", strings.Replace(strings.Replace(ok, `"version":1`, `"version":2`, 1),
			`"nullable":true}`, `"nullable":true},{"name":"late","type":"string","nullable":true,"since":2,"nullable_since":2}`, 1), "never required"},
		{"dictionary false on json", strings.Replace(ok, `"nullable":true}`, `"nullable":true,"dictionary":false}`, 1), ""},
		{"dictionary true on a string", strings.Replace(ok, `"columns":[`, `"columns":[{"name":"s","type":"string","dictionary":true},`, 1), ""},
		{"dictionary on an int", strings.Replace(ok, `"columns":[`, `"columns":[{"name":"n","type":"int64","dictionary":false},`, 1), "dictionary only applies to string and json"},
		{"dictionary not a bool", strings.Replace(ok, `"nullable":true}`, `"nullable":true,"dictionary":"no"}`, 1), "is not true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCatalog([]byte(`{"datasets":[` + tt.doc + `]}`))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want error containing %q, got %v", tt.want, err)
			}
		})
	}
}

// TestDictionaryHintJSON: the hint reads from true, false or nothing and
// writes back the same way.
func TestDictionaryHintJSON(t *testing.T) {
	for _, tt := range []struct {
		doc  string
		want DictionaryHint
	}{
		{`{"name":"a","type":"string"}`, DictionaryDefault},
		{`{"name":"a","type":"string","dictionary":null}`, DictionaryDefault},
		{`{"name":"a","type":"string","dictionary":true}`, DictionaryOn},
		{`{"name":"a","type":"string","dictionary":false}`, DictionaryOff},
	} {
		var c Column
		if err := json.Unmarshal([]byte(tt.doc), &c); err != nil {
			t.Fatalf("%s: %v", tt.doc, err)
		}
		if c.Dictionary != tt.want {
			t.Errorf("%s: hint %d, want %d", tt.doc, c.Dictionary, tt.want)
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var back Column
		if err := json.Unmarshal(b, &back); err != nil || back.Dictionary != tt.want {
			t.Errorf("%s: wrote %s, read back %d (%v)", tt.doc, b, back.Dictionary, err)
		}
		if tt.want == DictionaryDefault && strings.Contains(string(b), "dictionary") {
			t.Errorf("%s: wrote %s, want the hint omitted", tt.doc, b)
		}
	}
}

func TestTypeText(t *testing.T) {
	for _, s := range []string{"date", "timestamp", "int64", "double", "decimal(18,2)", "decimal(38,10)", "boolean", "string", "json"} {
		ty, err := ParseType(s)
		if err != nil || ty.String() != s {
			t.Errorf("ParseType(%q) = %v, %v", s, ty, err)
		}
	}
	for _, s := range []string{"", "float", "decimal(0,0)", "decimal(5,6)", "decimal(18)", "decimal(a,b)"} {
		if _, err := ParseType(s); err == nil {
			t.Errorf("ParseType(%q) accepted", s)
		}
	}
}

func TestDecimal(t *testing.T) {
	tests := []struct {
		in    string
		scale int
		want  string
		err   bool
	}{
		{"12.3", 2, "12.30", false},
		{"-0.05", 2, "-0.05", false},
		{"+7", 2, "7.00", false},
		{".5", 2, "0.50", false},
		{"9999999999999999.99", 2, "9999999999999999.99", false},
		{"-9223372036854775808", 0, "-9223372036854775808", false},
		{"12345678901234567890123456789.123456789", 9, "12345678901234567890123456789.123456789", false},
		{"-12345678901234567890123456789.5", 1, "-12345678901234567890123456789.5", false},
		{"1.234", 2, "", true},
		{"1.2300", 2, "1.23", false},
		{"1e3", 2, "", true},
		{"abc", 2, "", true},
		{"", 2, "", true},
		{"1.2.3", 2, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			d, err := ParseDecimal(tt.in, tt.scale)
			if tt.err {
				if err == nil {
					t.Fatalf("accepted %q as %s", tt.in, d)
				}
				return
			}
			if err != nil || d.String() != tt.want {
				t.Fatalf("ParseDecimal(%q) = %s, %v; want %s", tt.in, d, err, tt.want)
			}
			back, err := ParseDecimal(d.String(), tt.scale)
			if err != nil || !back.Equal(d) {
				t.Fatalf("round trip %s -> %s, %v", d, back, err)
			}
		})
	}
}
