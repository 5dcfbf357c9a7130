package manifest

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestCheck: a manifest read back from a bucket is believed only when it
// says the partition and generation it was read as, and lists only data
// files of that partition in its format; each refusal names the field and
// the value found.
func TestCheck(t *testing.T) {
	t.Parallel()
	const pp = "daybook/acct_a/v2/events/dt=2026-03-05/"
	want := Expect{AccountID: "acct_a", Dataset: "events", Contract: "v2", Day: "2026-03-05", Generation: 3, Partition: pp, Extension: ".parquet"}
	good := func() *Manifest {
		m := &Manifest{AccountID: "acct_a", Dataset: "events", Contract: "v2", Day: "2026-03-05", Generation: 3,
			Files: []File{{Key: pp + "part-00000.parquet", Rows: 2, Bytes: 10}, {Key: pp + "part-s0001-00003.parquet", Rows: 1, Bytes: 5}}}
		m.Sum()
		return m
	}
	if err := good().Check(want); err != nil {
		t.Fatalf("the partition's own manifest: %v", err)
	}
	for _, tc := range []struct {
		name  string
		forge func(m *Manifest)
		says  string
	}{
		{"another account", func(m *Manifest) { m.AccountID = "acct_b" }, `account_id "acct_b"`},
		{"another dataset", func(m *Manifest) { m.Dataset = "profiles" }, `dataset "profiles"`},
		{"another contract", func(m *Manifest) { m.Contract = "v3" }, `contract "v3"`},
		{"another day", func(m *Manifest) { m.Day = "2026-03-06" }, `day "2026-03-06"`},
		{"another generation", func(m *Manifest) { m.Generation = math.MaxInt64 }, "generation 9223372036854775807"},
		{"a file of another account", func(m *Manifest) { m.Files[0].Key = "daybook/acct_b/v2/events/dt=2026-03-05/part-00000.parquet" }, `files[0].key "daybook/acct_b/`},
		{"a file of another day", func(m *Manifest) { m.Files[1].Key = "daybook/acct_a/v2/events/dt=2026-03-04/part-00000.parquet" }, "files[1].key"},
		{"a key below the partition", func(m *Manifest) { m.Files[0].Key = pp + "x/part-00000.parquet" }, "files[0].key"},
		{"a key going up", func(m *Manifest) { m.Files[0].Key = pp + "../../../../acct_b/part-00000.parquet" }, "files[0].key"},
		{"the marker", func(m *Manifest) { m.Files[0].Key = pp + "_SUCCESS" }, `files[0].key "` + pp + `_SUCCESS"`},
		{"another format", func(m *Manifest) { m.Files[0].Key = pp + "part-00000.ndjson.gz" }, "is not a data file of " + pp + "part-*.parquet"},
		{"not a part number", func(m *Manifest) { m.Files[0].Key = pp + "part-0.parquet" }, "files[0].key"},
		{"negative rows", func(m *Manifest) { m.Files[0].Rows = -5 }, "files[0] rows -5"},
		{"rows that overflow", func(m *Manifest) { m.Files[0].Rows, m.Files[1].Rows = math.MaxInt64, 1 }, "files[1] rows 1"},
		{"totals not the files' sum", func(m *Manifest) { m.Totals.Rows = 1 << 40 }, "totals 2 files, 1099511627776 rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := good()
			tc.forge(m)
			if tc.name != "totals not the files' sum" && !strings.HasPrefix(tc.name, "negative") && !strings.HasPrefix(tc.name, "rows") {
				m.Sum()
			}
			err := m.Check(want)
			if !errors.Is(err, ErrNotThePartition) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), pp+"_manifest.json") {
				t.Errorf("Check = %v, want ErrNotThePartition naming %s and the manifest", err, tc.says)
			}
		})
	}
	legacy := good()
	legacy.Contract = "v1" // written before the field was the dataset's contract
	if err := legacy.Check(want); err != nil {
		t.Errorf("a manifest of a v2 partition that says v1, as every manifest did: %v", err)
	}
	wrongGen := want
	wrongGen.Generation = 0
	if err := good().Check(wrongGen); err == nil {
		t.Error("a generation 0 is expected of no manifest")
	}
}
