package verify_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/verify"
)

// TestPlantedManifestReadsOnlyThePartition: a _SUCCESS and a manifest
// planted in a partition, listing a data file of another account's prefix
// in the same bucket (a copy of a real file, so reading it would match), a
// key climbing out with "..", a key below the partition and the marker
// itself, fail the check with each key named, and no call of Check, with
// the files downloaded or not, reads anything but the partition and the
// day's delivery manifest.
func TestPlantedManifestReadsOnlyThePartition(t *testing.T) {
	cfg, err := srv.Config(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	api := awsclient.NewS3(cfg)
	f := commit(t, api, mustDataset(t, "events"), fileformat.Parquet, 1, 10)
	pp := f.target.PartitionPrefix()
	elsewhere := strings.Replace(f.m.Files[0].Key, fixturePrefix, "tenants/acct_other", 1)
	f.put(elsewhere, f.get(f.m.Files[0].Key))
	m := *f.m
	m.Files = slices.Clone(m.Files)
	real := m.Files[0]
	for _, k := range []string{elsewhere, pp + "../../../../acct_other/v1/events/dt=2026-03-05/part-00000.parquet", pp + "x/part-00000.parquet", pp + layout.SuccessName} {
		forged := real
		forged.Key = k
		m.Files = append(m.Files, forged)
	}
	m.Sum()
	f.rewriteManifest(&m)
	for _, o := range []verify.Options{{}, {Download: true}} {
		rec := &recorder{API: api}
		r, err := verify.Check(t.Context(), in(rec, f.target.Bucket), f.target, o)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != verify.StatusFailed || len(r.Problems()) < 4 {
			t.Errorf("Check of the planted manifest: %s, problems %q", r.Status, r.Problems())
		}
		for _, k := range m.Files[1:] {
			if !strings.Contains(strings.Join(r.Problems(), "\n"), k.Key) {
				t.Errorf("no problem names %s: %q", k.Key, r.Problems())
			}
		}
		for _, op := range rec.ops {
			_, rest, _ := strings.Cut(op, " ")
			key, _, _ := strings.Cut(rest, " ")
			if strings.Contains(key, "..") || !strings.HasPrefix(key, pp) && key != layout.DeliveryManifestKey(fixturePrefix, fixtureDay) {
				t.Errorf("call %s reads outside the partition %s", op, pp)
			}
		}
	}
}
