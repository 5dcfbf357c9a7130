package verify_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/verify"
)

// TestDays lists the day folders of one dataset: committed or not, sorted,
// with the dt= folders that are not a day apart, and nothing of another
// dataset or outside the partitions.
func TestDays(t *testing.T) {
	cfg, err := srv.Config(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	api := awsclient.NewS3(cfg)
	f := commit(t, api, mustDataset(t, "events"), fileformat.Parquet, 1, 5)
	dp := layout.ContractPrefix(fixturePrefix) + "events/"
	f.put(layout.DataKey(fixturePrefix, "events", civil.MustParse("2026-03-01"), 0, ".parquet"), []byte("x")) // no _SUCCESS: listed all the same
	f.put(dp+"dt=2026-13-01/part-00000.parquet", []byte("x"))
	f.put(dp+"dt=2026-3-2/part-00000.parquet", []byte("x"))
	f.put(dp+"notes.txt", []byte("x"))
	f.put(layout.ContractPrefix(fixturePrefix)+"profiles/dt=2026-03-09/part-00000.parquet", []byte("x"))
	rec := &recorder{API: api}
	days, strays, err := verify.Days(t.Context(), in(rec, f.target.Bucket), verify.Target{Bucket: f.target.Bucket, Prefix: fixturePrefix, Dataset: "events"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []civil.Date{civil.MustParse("2026-03-01"), fixtureDay}; !reflect.DeepEqual(days, want) {
		t.Errorf("days %v, want %v", days, want)
	}
	if want := []string{dp + "dt=2026-13-01/", dp + "dt=2026-3-2/"}; !reflect.DeepEqual(strays, want) {
		t.Errorf("strays %q, want %q", strays, want)
	}
	if rec.count("ListObjectsV2 "+dp) != len(rec.ops) {
		t.Errorf("calls %v, want listings under %s only", rec.ops, dp)
	}

	rec = &recorder{}
	if _, _, err := verify.Days(t.Context(), in(rec, "b"), verify.Target{Bucket: "b", Prefix: fixturePrefix, Dataset: "../events"}); err == nil ||
		!strings.Contains(err.Error(), `dataset "../events"`) || len(rec.ops) != 0 {
		t.Errorf("Days of a bad dataset = %v after %v, want an error naming it before any call", err, rec.ops)
	}
}

// A dataset moved to contract v2 has two folders, v1/events/ and
// v2/events/: Datasets lists both (events, events.v2), and Check and Days
// read each tree on its own.
func TestBothContractTrees(t *testing.T) {
	cfg, err := srv.Config(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	api := awsclient.NewS3(cfg)
	v1 := mustDataset(t, "events")
	f1 := commit(t, api, v1, fileformat.Parquet, 1, 5)
	v2 := v1
	v2.Contract = "v2"
	f2 := commitTo(t, api, f1.target.Bucket, v2, fileformat.Parquet, 2, 3)
	if f2.target.PartitionPrefix() != fixturePrefix+"/v2/events/dt=2026-03-05/" || f1.target.PartitionPrefix() != fixturePrefix+"/v1/events/dt=2026-03-05/" {
		t.Fatalf("partitions %s and %s", f1.target.PartitionPrefix(), f2.target.PartitionPrefix())
	}
	names, err := verify.Datasets(t.Context(), in(api, f1.target.Bucket), verify.Target{Bucket: f1.target.Bucket, Prefix: fixturePrefix})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"events", "events.v2"}; !reflect.DeepEqual(names, want) {
		t.Errorf("Datasets = %q, want %q", names, want)
	}
	for _, c := range []struct {
		f    *fixture
		rows int64
	}{{f1, 5}, {f2, 6}} {
		r, err := verify.Check(t.Context(), in(api, c.f.target.Bucket), c.f.target, verify.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Rows != c.rows || len(r.Problems()) != 0 {
			var b strings.Builder
			_ = r.WriteText(&b)
			t.Errorf("%s: rows %d (want %d), report:\n%s", c.f.target.Dataset, r.Rows, c.rows, b.String())
		}
		days, _, err := verify.Days(t.Context(), in(api, c.f.target.Bucket), c.f.target)
		if err != nil || !reflect.DeepEqual(days, []civil.Date{fixtureDay}) {
			t.Errorf("%s: days %v, %v", c.f.target.Dataset, days, err)
		}
	}
}
