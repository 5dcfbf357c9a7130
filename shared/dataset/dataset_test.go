package dataset

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCatalog(t *testing.T) {
	t.Parallel()
	names := shipped(t).Names()
	if got := strings.Join(names, ","); got != "events,profiles,daily_stats" {
		t.Fatalf("names = %s", got)
	}
	ev, err := shipped(t).Get("events")
	if err != nil {
		t.Fatal(err)
	}
	if ev.Partition != PartitionEventTime || ev.Columns[7].Type != DecimalType(18, 2) || ev.Columns[1].Dictionary != DictionaryOn || ev.Columns[0].Dictionary != DictionaryOff {
		t.Fatalf("unexpected events declaration: %+v", ev)
	}
	p, _ := shipped(t).Get("profiles")
	if p.IDColumn != "profile_id" || p.OrderColumn != "last_seen_at" || p.Read != ReadUnionAllPartitions {
		t.Fatalf("profiles: %+v", p)
	}
	// Get returns a copy: mutating it must not leak into the catalog.
	ev.Columns[0].Name = "mutated"
	again, _ := shipped(t).Get("events")
	if again.Columns[0].Name != "event_id" {
		t.Fatal("Get leaked a shared slice")
	}

	_, err = shipped(t).Get("nope")
	if !errors.Is(err, ErrUnknownDataset) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("shipped(t).Get(nope) = %v", err)
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

// A column without "since" in the catalog was there from version 1, and
// the catalog says so explicitly (the schema snapshot records it).
func TestSinceDefault(t *testing.T) {
	t.Parallel()
	cat := shipped(t).Datasets()
	for _, d := range cat {
		for _, c := range d.Columns {
			if c.Since < 1 || c.Since > d.Version {
				t.Errorf("%s.%s: since %d, want 1..%d", d.Name, c.Name, c.Since, d.Version)
			}
		}
	}
	doc := `{"datasets":[{"name":"x","version":2,"partition":"event_time","partition_column":"at","relation":"x","mode":"incremental_append","read":"union_all_partitions",
	"columns":[{"name":"at","type":"timestamp"},{"name":"attributes","type":"json","nullable":true,"since":2}],
	"queries":{"sqlite":"select at, attributes from x where a = ? and at >= ? and at < ?","postgres":"select at, attributes from x where a = $1 and at >= $2 and at < $3"}}]}`
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
	t.Parallel()
	ok := `{"name":"x","version":1,"partition":"event_time","partition_column":"at","relation":"src.x","mode":"incremental_append","read":"union_all_partitions",
	"columns":[{"name":"at","type":"timestamp"},{"name":"attributes","type":"json","nullable":true}],
	"queries":{"sqlite":"select at, attributes FROM src.x where a = ? and at >= ? and at < ?","postgres":"select at, attributes from src.x where a = $1 and at >= $2 and at < $3"}}`
	tests := []struct{ name, doc, want string }{
		{"valid", ok, ""},
		{"unknown field", strings.Replace(ok, `"version":1`, `"version":1,"colour":"red"`, 1), `datasets[0]: dataset x: unknown field "colour"`},
		{"unknown column field", strings.Replace(ok, `{"name":"at","type":"timestamp"}`, `{"name":"at","tpye":"timestamp"}`, 1), `datasets[0]: dataset x: unknown field "tpye"`},
		{"bad type", strings.Replace(ok, `"type":"json"`, `"type":"decimal(40,2)"`, 1), "decimal precision 40"},
		// A dataset's columns are its table's: a JSON column holds per-tenant
		// custom fields when the table has them, and none is required.
		{"no json column", strings.ReplaceAll(strings.Replace(ok, `,{"name":"attributes","type":"json","nullable":true}`, ``, 1), `select at, attributes`, `select at`), ""},
		{"a json column of another name", strings.ReplaceAll(strings.Replace(ok, `"name":"attributes"`, `"name":"user_data"`, 1), `attributes`, `user_data`), ""},
		{"bad partition", strings.Replace(ok, `event_time`, `hourly`, 1), `unknown partition "hourly"`},
		{"too few params", strings.Replace(ok, `at >= ? and`, `at >= 1 and`, 1), "queries.sqlite: want 3 ? placeholders"},
		{"a fourth parameter", strings.Replace(ok, `at < $3`, `at < $3 + $4`, 1), "queries.postgres: unexpected placeholder $4"},
		{"a tenth parameter", strings.Replace(ok, `a = $1`, `a = $1 or a = $10`, 1), "queries.postgres: unexpected placeholder $10"},
		{"a missing parameter", strings.Replace(ok, `at >= $2`, `at >= now()`, 1), "queries.postgres: missing placeholder $2"},
		{"reserved dt", strings.Replace(ok, `"columns":[`, `"columns":[{"name":"dt","type":"date"},`, 1), "reserved"},
		{"activity needs id", strings.Replace(ok, `event_time`, `activity`, 1), `id_column "" is not a column`},
		{"no partition column", strings.Replace(ok, `"partition_column":"at",`, ``, 1), `partition_column "" is not a column`},
		{"nullable partition column", strings.Replace(ok, `"type":"timestamp"}`, `"type":"timestamp","nullable":true}`, 1), "partition_column at must be a required timestamp"},
		{"stat_date partitions by a date", strings.Replace(ok, `event_time`, `stat_date`, 1), "partition_column at must be a required date"},
		{"bad relation", strings.Replace(ok, `"relation":"src.x"`, `"relation":"x; drop"`, 1), `relation "x; drop" must match`},
		{"query reads another relation", strings.Replace(ok, `from src.x where`, `from src.y where`, 1), `datasets[0]: dataset x: queries.postgres: does not read FROM its relation "src.x"`},
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
		{"dictionary true on a string", strings.ReplaceAll(strings.Replace(ok, `"columns":[`, `"columns":[{"name":"s","type":"string","dictionary":true},`, 1), `select at,`, `select s, at,`), ""},
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
