package layout

import (
	"fmt"
	"testing"

	"github.com/daybook-dev/daybook/shared/civil"
)

func TestDataKeysThrough(t *testing.T) {
	t.Parallel()
	day := civil.MustParse("2026-09-05")
	p := PartitionPrefix("daybook/acct_x", "events", day)
	k := func(n int) string { return DataKey("daybook/acct_x", "events", day, n, ".parquet") }
	s := func(slice, n int) string { return SliceDataKey("daybook/acct_x", "events", day, slice, n, ".parquet") }
	for _, tc := range []struct {
		name    string
		written []string
		want    []string
	}{
		{"nothing written", nil, nil},
		{"one file: it and the next", []string{k(0)}, []string{k(0), k(1)}},
		{"gaps are filled", []string{k(2), k(0)}, []string{k(0), k(1), k(2), k(3)}},
		{"each extension its own series", []string{k(0), DataKey("daybook/acct_x", "events", day, 0, ".ndjson.gz")},
			[]string{DataKey("daybook/acct_x", "events", day, 0, ".ndjson.gz"), k(0), DataKey("daybook/acct_x", "events", day, 1, ".ndjson.gz"), k(1)}},
		{"slices: each its own series, the first file of a slice without files", []string{s(0, 0), s(0, 1), s(2, 0)},
			[]string{s(0, 0), s(0, 1), s(0, 2), s(1, 0), s(2, 0), s(2, 1)}},
		{"not data files, or not directly under the partition: ignored", []string{
			p + ManifestName, p + SuccessName, p + LoadDir + "/duckdb.sql", p + "part-x.parquet", p + "part-0001.parquet",
			p + "part-s001-00000.parquet", p + "part-00000", p + "sub/part-00000.parquet",
			PartitionPrefix("daybook/acct_x", "events", day.AddDays(1)) + "part-00000.parquet",
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DataKeysThrough(p, tc.written)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("DataKeysThrough =\n %v\nwant\n %v", got, tc.want)
			}
		})
	}
}
