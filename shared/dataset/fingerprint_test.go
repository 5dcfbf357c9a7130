package dataset

import (
	"errors"
	"strings"
	"testing"
)

// TestCatalogDeclaresFingerprints: every shipped dataset declares a
// fingerprint query for every dialect, bound like its export query, so
// every dataset's recent days are checked for late data.
func TestCatalogDeclaresFingerprints(t *testing.T) {
	t.Parallel()
	cat := shipped(t).Datasets()
	for _, d := range cat {
		for _, dialect := range Dialects {
			q, err := d.FingerprintQuery(dialect)
			if err != nil {
				t.Errorf("%s: %v", d.Name, err)
				continue
			}
			if strings.Contains(strings.ToUpper(q), "ORDER BY") {
				t.Errorf("%s %s fingerprint sorts: it must be one aggregate row: %s", d.Name, dialect, q)
			}
			// Its first column is the day's row count: a sliced export is
			// sized by it (source.Summary.Rows).
			if !strings.HasPrefix(strings.ToUpper(q), "SELECT COUNT(*),") {
				t.Errorf("%s %s fingerprint does not begin with the row count (SELECT count(*), ...): %s", d.Name, dialect, q)
			}
		}
	}
}

// TestSliceable: only a dataset partitioned on a timestamp is exported in
// slices (time ranges of the day).
func TestSliceable(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{"events": true, "profiles": true, "daily_stats": false} {
		d, err := shipped(t).Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Sliceable(); got != want {
			t.Errorf("%s Sliceable = %v, want %v (partition column %s)", name, got, want, d.PartitionColumn)
		}
	}
	if (Dataset{Name: "x", PartitionColumn: "missing"}).Sliceable() {
		t.Error("a dataset without its partition column is sliceable")
	}
}

func TestFingerprintQueryMissing(t *testing.T) {
	t.Parallel()
	_, err := Dataset{Name: "x"}.FingerprintQuery(DialectSQLite)
	if !errors.Is(err, ErrNoFingerprint) || !strings.Contains(err.Error(), "dataset x: sqlite") {
		t.Fatalf("FingerprintQuery of a dataset without one: %v", err)
	}
}

func TestParseCatalogFingerprint(t *testing.T) {
	t.Parallel()
	base := `{"name":"x","version":1,"partition":"event_time","partition_column":"at","relation":"t","mode":"incremental_append","read":"union_all_partitions",
	"columns":[{"name":"at","type":"timestamp"},{"name":"attributes","type":"json","nullable":true}],
	"queries":{"sqlite":"select at, attributes from t where a = ? and at >= ? and at < ?","postgres":"select at, attributes from t where a = $1 and at >= $2 and at < $3"}FP}`
	tests := []struct{ name, fp, want string }{
		{"none", ``, ""},
		{"both dialects", `,"fingerprint":{"sqlite":"SELECT count(*) FROM t WHERE a = ? AND b >= ? AND b < ?","postgres":"SELECT count(*) FROM t WHERE a = $1 AND b >= $2 AND b < $3"}`, ""},
		{"one dialect missing", `,"fingerprint":{"sqlite":"SELECT count(*) FROM t WHERE a = ? AND b >= ? AND b < ?"}`, "fingerprint.postgres: no query"},
		{"unknown dialect", `,"fingerprint":{"oracle":"SELECT 1"}`, `fingerprint: unknown dialect "oracle"`},
		{"not a select", `,"fingerprint":{"sqlite":"DELETE FROM t WHERE a = ? AND b >= ? AND b < ?","postgres":"SELECT count(*) FROM t WHERE a = $1 AND b >= $2 AND b < $3"}`, "fingerprint.sqlite: must be a SELECT"},
		{"wrong binding", `,"fingerprint":{"sqlite":"SELECT count(*) FROM t WHERE a = ?","postgres":"SELECT count(*) FROM t WHERE a = $1 AND b >= $2 AND b < $3"}`, "fingerprint.sqlite: want 3 ? placeholders, found 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, err := ParseCatalog([]byte(`{"datasets":[` + strings.Replace(base, "FP", tt.fp, 1) + `]}`))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				// Catalog copies are independent: a caller cannot change the catalog's queries.
				c := ds[0].clone()
				if c.Fingerprint != nil {
					c.Fingerprint[DialectSQLite] = "changed"
					if ds[0].Fingerprint[DialectSQLite] == "changed" {
						t.Fatal("clone shares the fingerprint queries")
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want error containing %q, got %v", tt.want, err)
			}
		})
	}
}

func TestReseedable(t *testing.T) {
	t.Parallel()
	want := map[string]bool{"events": false, "profiles": true, "daily_stats": false}
	cat := shipped(t).Datasets()
	for _, d := range cat {
		if got, ok := want[d.Name]; !ok || got != d.Reseedable() {
			t.Errorf("%s (partition %s, mode %s): Reseedable() = %v, want %v", d.Name, d.Partition, d.Mode, d.Reseedable(), got)
		}
	}
}
