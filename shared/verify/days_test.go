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
	rec := &recorder{api: api}
	days, strays, err := verify.Days(t.Context(), rec, verify.Target{Bucket: f.target.Bucket, Prefix: fixturePrefix, Dataset: "events"})
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
	if _, _, err := verify.Days(t.Context(), rec, verify.Target{Bucket: "b", Prefix: fixturePrefix, Dataset: "../events"}); err == nil ||
		!strings.Contains(err.Error(), `dataset "../events"`) || len(rec.ops) != 0 {
		t.Errorf("Days of a bad dataset = %v after %v, want an error naming it before any call", err, rec.ops)
	}
}
